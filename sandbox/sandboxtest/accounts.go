package sandboxtest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// Accounts plays the users and groups of a sandbox image for a Script,
// so that sandbox.CreateUser, AsUser, CreateGroup, User.AddToGroup and
// User.RemoveFromGroup can be tested without real processes. It keeps the
// accounts in memory and answers as the shadow tools do (exit codes and
// messages): useradd and groupadd (exit 9 for a name in use), usermod -aG,
// gpasswd -d, id, the "id -un; id -gn" line that finds the default user,
// and sudo -u, which runs the wrapped command through the Script as that
// user (whoami and id -un answer the user's name). chown, chmod and
// mkdir succeed without doing anything.
//
// It starts with root and the default user "vercel-sandbox", each with a
// group of its own name.
type Accounts struct {
	mu     sync.Mutex
	users  map[string]*scriptUser
	groups map[string]bool
}

type scriptUser struct {
	primary string
	groups  map[string]bool
}

// DefaultUser is the user an Accounts runs commands as without sudo.
const DefaultUser = "vercel-sandbox"

// NewAccounts returns the accounts of a fresh sandbox.
func NewAccounts() *Accounts {
	a := &Accounts{users: map[string]*scriptUser{}, groups: map[string]bool{}}
	for _, n := range []string{"root", DefaultUser} {
		a.users[n] = &scriptUser{primary: n, groups: map[string]bool{}}
		a.groups[n] = true
	}
	return a
}

// Install registers the handlers on s and returns s.
func (a *Accounts) Install(s *Script) *Script {
	s.Handle(MatchArgs("sh", "-c", "id -un; id -gn"), Reply{Stdout: DefaultUser + "\n" + DefaultUser + "\n"})
	s.Handle(MatchName("useradd"), a.tool(a.useradd))
	s.Handle(MatchName("groupadd"), a.tool(a.groupadd))
	s.Handle(MatchName("usermod"), a.tool(a.usermod))
	s.Handle(MatchName("gpasswd"), a.tool(a.gpasswd))
	s.Handle(MatchName("id"), a.tool(a.id))
	for _, n := range []string{"chown", "chmod", "mkdir"} {
		s.Handle(MatchName(n), Reply{})
	}
	s.Handle(MatchName("sudo"), HandlerFunc(func(ctx context.Context, cmd *local.Cmd, signals <-chan int) int {
		return a.sudo(ctx, s, cmd, signals)
	}))
	return s
}

// Users returns the names of the users, sorted.
func (a *Accounts) Users() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.users))
}

// GroupsOf returns the supplementary groups of a user, sorted.
func (a *Accounts) GroupsOf(user string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.users[user]; u != nil {
		return slices.Sorted(maps.Keys(u.groups))
	}
	return nil
}

// tool adapts fn, which answers with an exit code and a message for
// standard error, or the text for standard output when the code is 0.
func (a *Accounts) tool(fn func(cmd *local.Cmd, args []string) (int, string)) Handler {
	return HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		a.mu.Lock()
		code, text := fn(cmd, operands(cmd.Args))
		a.mu.Unlock()
		w := cmd.Stdout
		if code != 0 {
			w = cmd.Stderr
		}
		if text != "" {
			fmt.Fprintln(w, text)
		}
		return code
	})
}

// operands drops the options the SDK passes, keeping names.
func operands(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-m", "--", "-d", "-un", "-gn", "-aG":
		case "-s":
			i++
		default:
			out = append(out, args[i])
		}
	}
	return out
}

func (a *Accounts) useradd(cmd *local.Cmd, names []string) (int, string) {
	if !cmd.Sudo || len(names) != 1 {
		return 1, "useradd: Permission denied."
	}
	n := names[0]
	if a.users[n] != nil {
		return 9, fmt.Sprintf("useradd: user '%s' already exists", n)
	}
	if a.groups[n] {
		return 9, fmt.Sprintf("useradd: group %s exists - if you want to add this user to that group, use -g.", n)
	}
	a.users[n] = &scriptUser{primary: n, groups: map[string]bool{}}
	a.groups[n] = true
	return 0, ""
}

func (a *Accounts) groupadd(cmd *local.Cmd, names []string) (int, string) {
	if !cmd.Sudo || len(names) != 1 {
		return 10, "groupadd: Permission denied."
	}
	if a.groups[names[0]] {
		return 9, fmt.Sprintf("groupadd: group '%s' already exists", names[0])
	}
	a.groups[names[0]] = true
	return 0, ""
}

// usermod -aG group user
func (a *Accounts) usermod(cmd *local.Cmd, names []string) (int, string) {
	if !cmd.Sudo || len(names) != 2 {
		return 1, "usermod: Permission denied."
	}
	g, n := names[0], names[1]
	u := a.users[n]
	switch {
	case u == nil:
		return 6, fmt.Sprintf("usermod: user '%s' does not exist", n)
	case !a.groups[g]:
		return 6, fmt.Sprintf("usermod: group '%s' does not exist", g)
	}
	u.groups[g] = true
	return 0, ""
}

// gpasswd -d user group
func (a *Accounts) gpasswd(cmd *local.Cmd, names []string) (int, string) {
	if !cmd.Sudo || len(names) != 2 {
		return 1, "gpasswd: Permission denied."
	}
	n, g := names[0], names[1]
	if !a.groups[g] {
		return 3, fmt.Sprintf("gpasswd: group '%s' does not exist in /etc/group", g)
	}
	u := a.users[n]
	if u == nil || !u.groups[g] {
		return 3, fmt.Sprintf("gpasswd: user '%s' is not a member of '%s'", n, g)
	}
	delete(u.groups, g)
	return 0, ""
}

// id -un [user] | id -gn [user]
func (a *Accounts) id(cmd *local.Cmd, names []string) (int, string) {
	name := DefaultUser
	if cmd.Sudo {
		name = "root"
	}
	if len(names) > 0 {
		name = names[0]
	}
	u := a.users[name]
	if u == nil {
		return 1, fmt.Sprintf("id: '%s': no such user", name)
	}
	if slices.Contains(cmd.Args, "-gn") {
		return 0, u.primary
	}
	return 0, name
}

// userCommand is a command a sandbox.User wraps in sudo -u USER -- bash
// -c SCRIPT bash DIR [env -- K=V... [/usr/bin/nice -n 0 --]] NAME ARGS...
type userCommand struct {
	user, dir string
	inner     local.Cmd // the wrapped command, Cwd set to DIR
}

// parseUserCommand unwraps cmd, reporting false for any other sudo line.
// It reads the line as env(1) does: the variables end at the first word
// without "=", and /usr/bin/nice -n 0 -- before a name holding "="
// changes nothing.
func parseUserCommand(cmd *local.Cmd) (userCommand, bool) {
	args := cmd.Args
	if len(args) < 9 || args[0] != "-u" || args[2] != "--" || args[3] != "bash" {
		return userCommand{}, false
	}
	uc := userCommand{user: args[1], dir: args[7], inner: *cmd}
	rest := args[8:]
	env := maps.Clone(cmd.Env)
	if len(rest) > 1 && rest[0] == "env" && rest[1] == "--" {
		for rest = rest[2:]; len(rest) > 0; rest = rest[1:] {
			k, v, ok := strings.Cut(rest[0], "=")
			if !ok {
				break
			}
			if env == nil {
				env = map[string]string{}
			}
			env[k] = v
		}
		if len(rest) > 4 && slices.Equal(rest[:4], []string{"/usr/bin/nice", "-n", "0", "--"}) {
			rest = rest[4:]
		}
	}
	if len(rest) == 0 {
		return userCommand{}, false
	}
	uc.inner.Name, uc.inner.Args, uc.inner.Env, uc.inner.Cwd, uc.inner.Sudo = rest[0], rest[1:], env, uc.dir, uc.user == "root"
	return uc, true
}

// known reports whether user exists.
func (a *Accounts) known(user string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[user] != nil
}

// answerUser answers what only the accounts know (an unknown user, whoami,
// id -un) and reports whether it did.
func (a *Accounts) answerUser(uc userCommand, cmd *local.Cmd) (code int, done bool) {
	if !a.known(uc.user) {
		fmt.Fprintf(cmd.Stderr, "sudo: unknown user %s\n", uc.user)
		return 1, true
	}
	if uc.inner.Name == "whoami" || uc.inner.Name == "id" && slices.Contains(uc.inner.Args, "-un") {
		fmt.Fprintln(cmd.Stdout, uc.user)
		return 0, true
	}
	return 0, false
}

// sudo plays the command line of a sandbox.User: the wrapped command goes
// to the Script.
func (a *Accounts) sudo(ctx context.Context, s *Script, cmd *local.Cmd, signals <-chan int) int {
	uc, ok := parseUserCommand(cmd)
	if !ok {
		fmt.Fprintln(cmd.Stderr, "sandboxtest: Accounts understands only the sudo -u line of sandbox.User")
		return 1
	}
	if code, done := a.answerUser(uc, cmd); done {
		return code
	}
	h, ok, registered := s.lookup(&uc.inner)
	if !ok {
		h = unmatchedHandler(registered)
	}
	return h.Run(ctx, &uc.inner, signals)
}

// Executor returns an executor that plays the account commands with a
// Script of its own (those Install registers, and every command run with
// sudo) and starts everything else on fallback. A command a sandbox.User
// runs is unwrapped and started on fallback too, in its directory, as the
// fallback's own user. With a fallback that runs host processes
// (hostexec), the users and groups calls of a sandbox work without
// changing the host's accounts, and without sudo on the host.
func (a *Accounts) Executor(fallback local.Executor) local.Executor {
	return &accountsExecutor{accounts: a, script: a.Install(NewScript()), fallback: fallback}
}

type accountsExecutor struct {
	accounts *Accounts
	script   *Script
	fallback local.Executor
}

// accountCommands are the names the account executor plays itself.
// hostDir maps the directory of a user's command to the host: a path
// inside the sandbox's host directory is one already (host-path mode);
// any other is a sandbox path below it.
func hostDir(root, dir string) string {
	if root == "" || dir == root || strings.HasPrefix(dir, root+"/") {
		return dir
	}
	return filepath.Join(root, filepath.FromSlash(dir))
}

var accountCommands = []string{"useradd", "groupadd", "usermod", "gpasswd", "id", "sudo"}

func (e *accountsExecutor) Start(ctx context.Context, cmd *local.Cmd) (local.Process, error) {
	if uc, ok := parseUserCommand(cmd); ok && cmd.Name == "sudo" && !cmd.Sudo {
		if _, answered := e.accounts.answerUser(uc, &local.Cmd{Stdout: io.Discard, Stderr: io.Discard}); !answered {
			inner := uc.inner
			inner.Sudo, inner.HostCwd = false, hostDir(cmd.Dir, uc.dir)
			return e.fallback.Start(ctx, &inner)
		}
	}
	if cmd.Sudo || slices.Contains(accountCommands, cmd.Name) || MatchArgs("sh", "-c", "id -un; id -gn")(cmd) {
		return e.script.Start(ctx, cmd)
	}
	return e.fallback.Start(ctx, cmd)
}
