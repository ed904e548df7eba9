package wire

// InteractiveResponse is the answer of POST …/interactive: the WebSocket
// that serves a terminal, and the token that opens it (sent as the token
// query parameter).
type InteractiveResponse struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// Types of the text frames of the terminal protocol. On the WebSocket the
// client sends one start frame, then its input as binary frames and resize
// frames when its window changes; the server sends the terminal's output as
// binary frames and one exit frame, then closes.
const (
	PTYStart  = "start"
	PTYResize = "resize"
	PTYExit   = "exit"
)

// PTYStartFrame is the first frame a client sends: the command to run on a new
// terminal. The CLI always sends command, args, env and cwd; cols and rows
// only when it knows them.
type PTYStartFrame struct {
	Type    string   `json:"type"` // PTYStart
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env"` // KEY=value
	Cwd     string   `json:"cwd,omitempty"`
	Cols    int      `json:"cols,omitempty"`
	Rows    int      `json:"rows,omitempty"`
}

// PTYResizeFrame tells the server the client's window changed size.
type PTYResizeFrame struct {
	Type string `json:"type"` // PTYResize
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

// PTYExitFrame is the last frame the server sends: the command's exit
// code.
type PTYExitFrame struct {
	Type string `json:"type"` // PTYExit
	Code *int   `json:"code"`
}
