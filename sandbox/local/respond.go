package local

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Error codes the server answers with.
const (
	codeBadRequest     = "bad_request"
	codeFileError      = "file_error"
	codeNotFound       = "not_found"
	codeForbidden      = "forbidden"
	codeStopped        = "sandbox_stopped"
	codeStopping       = "sandbox_stopping"
	codeSnapshotting   = "sandbox_snapshotting"
	codeSnapNotFound   = "snapshot_not_found"
	codeTimeoutInvalid = "sandbox_timeout_invalid"
	codeMethod         = "method_not_allowed"
	codeUnavailable    = "service_unavailable"
	codeRateLimited    = "rate_limited"
	codeExecNotFound   = "executable_not_found"
)

// maxJSONBody bounds a JSON request body. Real bodies are tiny.
const maxJSONBody = 8 << 20

// apiError is an error answer: an HTTP status and the {"error":{…}} body.
type apiError struct {
	status  int
	code    string
	message string
	extra   map[string]any // extra keys inside "error" (e.g. invalidToken)
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message)
}

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, codeBadRequest, format, args...)
}

func notFound(format string, args ...any) *apiError {
	return errorf(http.StatusNotFound, codeNotFound, format, args...)
}

// writeJSON answers status with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only reachable through a programming error in the server; nothing
		// was changed by the encoder, so a 500 is honest here.
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal_error","message":"cannot encode response"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers e as the API's error envelope.
func writeError(w http.ResponseWriter, e *apiError) {
	if len(e.extra) == 0 {
		writeJSON(w, e.status, wire.ErrorBody{Error: wire.ErrorDetail{Code: e.code, Message: e.message}})
		return
	}
	inner := map[string]any{"code": e.code, "message": e.message}
	for k, v := range e.extra {
		inner[k] = v
	}
	writeJSON(w, e.status, map[string]any{"error": inner})
}

// readBody reads a JSON request body, treating an empty body as {}.
func readBody(r *http.Request) ([]byte, *apiError) {
	if r.Body == nil {
		return []byte("{}"), nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		return nil, badRequest("cannot read request body: %v", err)
	}
	if len(data) > maxJSONBody {
		return nil, badRequest("request body is too large")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{}"), nil
	}
	return data, nil
}

// decodeBody reads the JSON body of r into v. Unknown keys are ignored; an
// empty body counts as {}.
func decodeBody(r *http.Request, v any) *apiError {
	data, aerr := readBody(r)
	if aerr != nil {
		return aerr
	}
	if err := json.Unmarshal(data, v); err != nil {
		return badRequest("invalid request body: %v", err)
	}
	return nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func ptr[T any](v T) *T { return &v }

// paginate returns the page of items that starts at cursor. The cursor is
// an opaque offset; next is nil on the last page.
func paginate[T any](items []T, limit int, cursor string) ([]T, wire.Pagination, *apiError) {
	off := 0
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		n, perr := strconv.Atoi(strings.TrimPrefix(string(raw), "offset:"))
		if err != nil || perr != nil || !strings.HasPrefix(string(raw), "offset:") || n < 0 {
			return nil, wire.Pagination{}, badRequest("Invalid cursor %q.", cursor)
		}
		off = n
	}
	if off > len(items) {
		off = len(items)
	}
	end := min(off+limit, len(items))
	page := items[off:end]
	pag := wire.Pagination{Count: len(page)}
	if end < len(items) {
		pag.Next = ptr(base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(end))))
	}
	return page, pag, nil
}

// listQuery holds the paging parameters shared by the session and snapshot
// lists.
type listQuery struct {
	limit  int
	desc   bool
	name   string
	cursor string
}

// parsePaging parses the limit and sortOrder of a list query.
func parsePaging(q url.Values) (limit int, desc bool, aerr *apiError) {
	if limit, aerr = parseLimit(q.Get("limit")); aerr != nil {
		return 0, false, aerr
	}
	desc, aerr = parseSortOrder(q.Get("sortOrder"))
	return limit, desc, aerr
}

func (s *Server) parseListQuery(q url.Values) (listQuery, *apiError) {
	if aerr := s.checkProjectQuery(q.Get("project")); aerr != nil {
		return listQuery{}, aerr
	}
	limit, desc, aerr := parsePaging(q)
	if aerr != nil {
		return listQuery{}, aerr
	}
	return listQuery{limit: limit, desc: desc, name: q.Get("name"), cursor: q.Get("cursor")}, nil
}

// creationItem is a list entry ordered by creation time, then by sequence.
type creationItem[T any] struct {
	seq, created int64
	w            T
}

// sortedPage orders items by creation and returns the page lq asks for.
func sortedPage[T any](items []creationItem[T], lq listQuery) ([]T, wire.Pagination, *apiError) {
	slices.SortFunc(items, func(a, b creationItem[T]) int {
		c := cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.seq, b.seq))
		if lq.desc {
			return -c
		}
		return c
	})
	page, pag, aerr := paginate(items, lq.limit, lq.cursor)
	if aerr != nil {
		return nil, pag, aerr
	}
	out := make([]T, len(page))
	for i, it := range page {
		out[i] = it.w
	}
	return out, pag, nil
}

// writeLocked answers 200 with the value build returns, built with s.mu
// held so that it reads a consistent state.
func (s *Server) writeLocked(w http.ResponseWriter, build func() any) *apiError {
	s.mu.Lock()
	v := build()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, v)
	return nil
}

// listPage answers the paging query of a list request: the records keep
// accepts, ordered by creation, as the page the query asks for. It takes
// s.mu.
func listPage[R, T any](s *Server, r *http.Request, recs func() []R, keep func(R, listQuery) bool, item func(R) creationItem[T]) ([]T, wire.Pagination, *apiError) {
	lq, aerr := s.parseListQuery(r.URL.Query())
	if aerr != nil {
		return nil, wire.Pagination{}, aerr
	}
	var items []creationItem[T]
	s.mu.Lock()
	for _, rec := range recs() {
		if keep(rec, lq) {
			items = append(items, item(rec))
		}
	}
	s.mu.Unlock()
	return sortedPage(items, lq)
}
