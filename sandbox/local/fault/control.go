package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// ControlPrefix is the path under which a server with an Injector (see
// Injector.Options) serves its control endpoint, so that tests written in
// other languages can inject faults and read the request log over HTTP:
//
//	GET    /_sandboxtest/faults       the injected faults, with their hits
//	POST   /_sandboxtest/faults       inject a fault: a JSON Fault (see
//	                                  Fault.MarshalJSON), or with Content-Type
//	                                  text/plain its text form; answers 201
//	DELETE /_sandboxtest/faults       remove every fault
//	DELETE /_sandboxtest/faults/{id}  remove one fault
//	GET    /_sandboxtest/requests     the requests received (local.Server.Requests)
//
// Every call needs the server's bearer token: a server made with
// local.WithAnyToken, which takes any token, refuses them all. Control calls are not
// recorded in the request log and are never faulted.
const ControlPrefix = "/_sandboxtest"

// faultInfo is a fault as the control endpoint reports it.
type faultInfo struct {
	ID    int64  `json:"id"`
	Text  string `json:"text"`
	Fault Fault  `json:"fault"`
	Hits  int    `json:"hits"`
}

// requestInfo is a request as the control endpoint reports it.
type requestInfo struct {
	Time     string              `json:"time"`
	Method   string              `json:"method"`
	Path     string              `json:"path"`
	Query    map[string][]string `json:"query,omitempty"`
	Header   map[string][]string `json:"header,omitempty"`
	Body     json.RawMessage     `json:"body,omitempty"`
	BodySize int64               `json:"bodySize"`
	Status   int                 `json:"status"`
	Fault    string              `json:"fault,omitempty"`
}

// control is the handler of the control endpoint.
func (in *Injector) control(srv *local.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest := strings.Trim(strings.TrimPrefix(r.URL.Path, ControlPrefix), "/")
		id, isFault := strings.CutPrefix(rest, "faults/")
		switch {
		case rest == "faults" && r.Method == http.MethodGet:
			in.listFaults(w, r)
		case rest == "faults" && r.Method == http.MethodPost:
			in.addFault(w, r)
		case rest == "faults" && r.Method == http.MethodDelete:
			in.ClearFaults()
			w.WriteHeader(http.StatusNoContent)
		case rest == "faults":
			methodNotAllowed(w, "GET, POST, DELETE")
		case isFault && r.Method == http.MethodDelete:
			in.removeFault(w, id)
		case isFault:
			methodNotAllowed(w, "DELETE")
		case rest == "requests" && r.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, map[string]any{"requests": requestInfos(srv.Requests())})
		case rest == "requests":
			methodNotAllowed(w, "GET")
		default:
			writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("No route for %s %s", r.Method, r.URL.Path))
		}
	})
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed; use "+allow)
}

func (in *Injector) listFaults(w http.ResponseWriter, _ *http.Request) {
	hs := in.Faults()
	out := make([]faultInfo, len(hs))
	for i, h := range hs {
		out[i] = faultInfo{ID: h.id, Text: h.txt, Fault: h.f, Hits: h.Hits()}
	}
	writeJSON(w, http.StatusOK, map[string]any{"faults": out})
}

func (in *Injector) addFault(w http.ResponseWriter, r *http.Request) {
	f, err := readFault(r)
	var h *Handle
	if err == nil {
		h, err = in.Add(f)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, faultInfo{ID: h.id, Text: h.txt, Fault: h.f})
}

func (in *Injector) removeFault(w http.ResponseWriter, text string) {
	id, err := strconv.ParseInt(text, 10, 64)
	for _, h := range in.Faults() {
		if err == nil && h.id == id {
			h.Remove()
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("No fault %q.", text))
}

func requestInfos(reqs []local.Request) []requestInfo {
	out := make([]requestInfo, len(reqs))
	for i, q := range reqs {
		out[i] = requestInfo{Time: q.Time.UTC().Format(time.RFC3339Nano), Method: q.Method, Path: q.Path,
			Query: q.Query, Header: q.Header, BodySize: q.BodySize, Status: q.Status, Fault: q.Fault}
		if len(q.Body) > 0 && json.Valid(q.Body) {
			out[i].Body = q.Body
		}
	}
	return out
}

// writeJSON answers status with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers in the API's error envelope.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: message}})
}

// readFault reads the fault of a POST to the control endpoint.
func readFault(r *http.Request) (Fault, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxCaptured))
	if err != nil {
		return Fault{}, err
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "text/plain" {
		return Parse(string(data))
	}
	var f Fault
	if err := json.Unmarshal(data, &f); err != nil {
		if errors.Is(err, ErrInvalid) {
			return Fault{}, err
		}
		return Fault{}, invalidFault("%v", err)
	}
	return f, nil
}
