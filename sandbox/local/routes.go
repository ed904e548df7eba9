package local

import (
	"net/http"
	"strings"
)

// routes is the whole API, one line per endpoint. Paths are matched
// without the /api prefix, which serveHTTP strips.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /v3/sandboxes", s.api(s.handleCreate))
	mux.Handle("POST /v2/sandboxes", s.api(s.handleCreate))
	mux.Handle("GET /v2/sandboxes", s.api(s.handleListSandboxes))
	mux.Handle("GET /v2/sandboxes/{name}", s.api(s.handleGetSandbox))
	mux.Handle("PATCH /v2/sandboxes/{name}", s.api(s.handleUpdateSandbox))
	mux.Handle("DELETE /v2/sandboxes/{name}", s.api(s.handleDeleteSandbox))
	mux.Handle("POST /v2/sandboxes/{name}/{action}", s.api(s.handleSandboxAction)) // fork; see handleSandboxAction

	mux.Handle("GET /v2/sandboxes/sessions", s.api(s.handleListSessions))
	mux.Handle("GET /v2/sandboxes/sessions/{sid}", s.api(s.handleGetSession))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/stop", s.api(s.handleStop))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/extend-timeout", s.api(s.handleExtend))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/network-policy", s.api(s.handleNetworkPolicy))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/interactive", s.api(s.handleInteractive))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/snapshot", s.api(s.handleSnapshot))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/fs/write", s.api(s.handleWriteFiles))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/fs/read", s.api(s.handleReadFile))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/fs/mkdir", s.api(s.handleMkdir))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/cmd", s.api(s.handleRunCommand))
	mux.Handle("GET /v2/sandboxes/sessions/{sid}/cmd", s.api(s.handleListCommands))
	mux.Handle("GET /v2/sandboxes/sessions/{sid}/cmd/{cid}", s.api(s.handleGetCommand))
	mux.Handle("POST /v2/sandboxes/sessions/{sid}/cmd/{cid}/kill", s.api(s.handleKill))
	mux.Handle("GET /v2/sandboxes/sessions/{sid}/cmd/{cid}/logs", s.api(s.handleLogs))

	mux.Handle("GET /v2/sandboxes/snapshots", s.api(s.handleListSnapshots))
	mux.Handle("GET /v2/sandboxes/snapshots/tree", s.api(s.handleSnapshotTree))
	mux.Handle("GET /v2/sandboxes/snapshots/{id}", s.api(s.handleGetSnapshot))
	mux.Handle("DELETE /v2/sandboxes/snapshots/{id}", s.api(s.handleDeleteSnapshot))

	mux.Handle("GET /v2/sandboxes/drives", s.api(s.handleListDrives))
	mux.Handle("GET /v2/sandboxes/drives/{name}", s.api(s.handleGetDrive))
	mux.Handle("POST /v2/sandboxes/drives/{name}", s.api(s.handleGetOrCreateDrive))
	mux.Handle("DELETE /v2/sandboxes/drives/{name}", s.api(s.handleDeleteDrive))
	return mux
}

// api adapts a handler that returns its error answer.
func (s *Server) api(h func(http.ResponseWriter, *http.Request) *apiError) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if aerr := h(w, r); aerr != nil {
			writeError(w, aerr)
		}
	})
}

// routeMethods are the methods the API uses, in the order an Allow
// header lists them.
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete}

// serveRoute answers r from the route table. A path that no endpoint has
// answers 404 and a method that its endpoint does not take answers 405 with
// Allow, both in the API's JSON error envelope (ServeMux's own answers are
// plain text). HEAD is not an API method, although ServeMux would serve it
// as GET.
func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" && r.Method != http.MethodHead {
		s.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range routeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeError(w, notFound("No route for %s %s", r.Method, r.URL.Path))
		return
	}
	list := strings.Join(allow, ", ")
	w.Header().Set("Allow", list)
	writeError(w, errorf(http.StatusMethodNotAllowed, codeMethod, "Method not allowed; use %s", list))
}
