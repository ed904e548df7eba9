// Package pty runs a command on a terminal in a sandbox: an interactive
// shell, an editor, a REPL. It is the terminal client that the official
// TypeScript SDK leaves to its CLI (sandbox connect).
//
// Start asks the sandbox for an interactive session (Sandbox.OpenInteractive),
// connects to its WebSocket and starts the command on a new pseudo-terminal
// of the given size. The terminal's output streams to Cmd.Stdout as it
// arrives and Cmd.Stdin (or Session.Write) is the keyboard; Resize reports a
// new window size, and Wait returns the command's exit code. Cancelling the
// context given to Start closes the session. Dial does the same with a
// ticket obtained elsewhere.
//
// # Keeping the session alive
//
// A sandbox's session stops at its timeout, terminal open or not. As
// sandbox connect does, Start extends the timeout while the terminal is
// open: by twice Cmd.KeepAlive (5 minutes by default) when the terminal
// opens, then by KeepAlive every KeepAlive, until the terminal closes; no
// goroutine outlives Wait. A negative KeepAlive turns this off. The
// extensions go to the session the terminal is on and never resume a
// stopped sandbox.
//
// # The ticket's token
//
// The ticket's token opens the terminal, so it goes only where the API
// said: a redirect is never followed (a *DialError names its status and
// the target's origin), and a plain ws:// URL is refused, before anything
// is sent, unless it names the local machine (127.0.0.0/8, ::1 or
// localhost), by the rule sandbox.NewClient applies to a plain-HTTP base
// URL (a *sandbox.InsecureURLError).
//
// # The protocol
//
// The client opens the ticket's URL with the token as its token query
// parameter, sends one text frame
// {"type":"start","command":…,"args":[…],"env":["K=V",…],"cwd":…,"cols":n,"rows":n},
// then its input as binary frames and {"type":"resize","cols":n,"rows":n}
// text frames. The server sends the terminal's output as binary frames and
// ends with the text frame {"type":"exit","code":n}; a text frame that is
// not a control message is output too. Pings are answered by the WebSocket
// layer; the protocol has no heartbeat of its own.
//
// # Errors
//
// A connection that ends before the exit frame gives a *DisconnectError,
// which matches ErrStreamEnded: no exit code is invented. A handshake the
// server refuses gives a *DialError with its status. The ticket's token
// never appears in an error: not where net/http quotes the URL, nor where
// a server echoes it (in a close reason, or in the headers of a handshake
// that the WebSocket layer quotes), in whatever case or encoding, or cut
// short.
//
// # Raw mode
//
// The package does not touch the local terminal. A program that wires its
// own terminal puts it in raw mode (golang.org/x/term) and restores it on
// every exit path; examples/shell shows how.
package pty
