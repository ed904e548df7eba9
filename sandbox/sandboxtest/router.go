package sandboxtest

import (
	"net/http"
	"strings"
)

// route dispatches one request; p is the path without the /api prefix.
func (s *Server) route(w http.ResponseWriter, r *http.Request, p string) *apiError {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if len(segs) < 2 || segs[1] != "sandboxes" {
		return notFoundRoute(r)
	}
	ver, rest := segs[0], segs[2:]
	switch ver {
	case "v3":
		if len(rest) == 0 {
			return on(w, r, "POST", func() *apiError { return s.handleCreate(w, r, "v3") })
		}
		return notFoundRoute(r)
	case "v2":
	default:
		return notFoundRoute(r)
	}

	if len(rest) == 0 {
		switch r.Method {
		case http.MethodPost:
			return s.handleCreate(w, r, "v2")
		case http.MethodGet:
			return s.handleListSandboxes(w, r)
		}
		return methodNotAllowed(w, "GET, POST")
	}
	switch rest[0] {
	case "sessions":
		return s.routeSessions(w, r, rest[1:])
	case "snapshots":
		return s.routeSnapshots(w, r, rest[1:])
	}
	name := rest[0]
	switch {
	case len(rest) == 1:
		switch r.Method {
		case http.MethodGet:
			return s.handleGetSandbox(w, r, name)
		case http.MethodPatch:
			return s.handleUpdateSandbox(w, r, name)
		case http.MethodDelete:
			return s.handleDeleteSandbox(w, r, name)
		}
		return methodNotAllowed(w, "GET, PATCH, DELETE")
	case len(rest) == 2 && rest[1] == "fork":
		return on(w, r, "POST", func() *apiError { return s.handleFork(w, r, name) })
	}
	return notFoundRoute(r)
}

func (s *Server) routeSessions(w http.ResponseWriter, r *http.Request, rest []string) *apiError {
	if len(rest) == 0 {
		return on(w, r, "GET", func() *apiError { return s.handleListSessions(w, r) })
	}
	sid, rest := rest[0], rest[1:]
	if len(rest) == 0 {
		return on(w, r, "GET", func() *apiError { return s.handleGetSession(w, sid) })
	}
	switch rest[0] {
	case "stop":
		if len(rest) == 1 {
			return on(w, r, "POST", func() *apiError { return s.handleStop(w, sid) })
		}
	case "extend-timeout":
		if len(rest) == 1 {
			return on(w, r, "POST", func() *apiError { return s.handleExtend(w, r, sid) })
		}
	case "network-policy":
		if len(rest) == 1 {
			return on(w, r, "POST", func() *apiError { return s.handleNetworkPolicy(w, r, sid) })
		}
	case "interactive":
		if len(rest) == 1 {
			return on(w, r, "POST", func() *apiError { return s.handleInteractive(sid) })
		}
	case "snapshot":
		if len(rest) == 1 {
			return on(w, r, "POST", func() *apiError { return s.handleSnapshot(w, r, sid) })
		}
	case "fs":
		if len(rest) == 2 {
			switch rest[1] {
			case "write":
				return on(w, r, "POST", func() *apiError { return s.handleWriteFiles(w, r, sid) })
			case "read":
				return on(w, r, "POST", func() *apiError { return s.handleReadFile(w, r, sid) })
			case "mkdir":
				return on(w, r, "POST", func() *apiError { return s.handleMkdir(w, r, sid) })
			}
		}
	case "cmd":
		switch len(rest) {
		case 1:
			return on(w, r, "POST", func() *apiError { return s.handleRunCommand(w, r, sid) })
		case 2:
			return on(w, r, "GET", func() *apiError { return s.handleGetCommand(w, r, sid, rest[1]) })
		case 3:
			switch rest[2] {
			case "kill":
				return on(w, r, "POST", func() *apiError { return s.handleKill(w, r, sid, rest[1]) })
			case "logs":
				return on(w, r, "GET", func() *apiError { return s.handleLogs(w, r, sid, rest[1]) })
			}
		}
	}
	return notFoundRoute(r)
}

func (s *Server) routeSnapshots(w http.ResponseWriter, r *http.Request, rest []string) *apiError {
	switch {
	case len(rest) == 0:
		return on(w, r, "GET", func() *apiError { return s.handleListSnapshots(w, r) })
	case len(rest) == 1 && rest[0] == "tree":
		return on(w, r, "GET", func() *apiError { return s.handleSnapshotTree(w, r) })
	case len(rest) == 1:
		switch r.Method {
		case http.MethodGet:
			return s.handleGetSnapshot(w, rest[0])
		case http.MethodDelete:
			return s.handleDeleteSnapshot(w, rest[0])
		}
		return methodNotAllowed(w, "GET, DELETE")
	}
	return notFoundRoute(r)
}

// on runs h when the request uses method, and answers 405 otherwise.
func on(w http.ResponseWriter, r *http.Request, method string, h func() *apiError) *apiError {
	if r.Method != method {
		return methodNotAllowed(w, method)
	}
	return h()
}

func methodNotAllowed(w http.ResponseWriter, allow string) *apiError {
	w.Header().Set("Allow", allow)
	return errorf(http.StatusMethodNotAllowed, codeMethod, "Method not allowed; use %s", allow)
}

func notFoundRoute(r *http.Request) *apiError {
	return notFound("No route for %s %s", r.Method, r.URL.Path)
}
