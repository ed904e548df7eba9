package sandbox

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/sbx-go/vercel-sandbox/command"
)

// User acts as one Linux user of a sandbox: its commands run as that user
// (through sudo -u, as the official SDK does), in its home directory by
// default, and its file calls (FS) see what that user may see. Get one from
// Sandbox.CreateUser or Sandbox.AsUser. It is safe for concurrent use.
type User struct {
	sb   *Sandbox
	name string
	home string

	mu           sync.Mutex
	primaryGroup string // the user's group, once looked up
	defaultGroup string // the sandbox default user's group, once looked up
}

// AsUser returns a handle acting as an existing user; nothing is checked
// in the sandbox. The name is validated as for CreateUser.
func (s *Sandbox) AsUser(name string) (*User, error) {
	if err := validateAccount("name", name); err != nil {
		return nil, err
	}
	home := "/home/" + name
	if name == "root" {
		home = "/root"
	}
	return &User{sb: s, name: name, home: home}, nil
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// Home returns the user's home directory, where its commands start and
// its relative paths point.
func (u *User) Home() string { return u.home }

// userScript changes to the directory in $1 and runs the rest. "--" ends
// exec's options: a command named "-a", "-c" or "--help" is the program
// to run, not an option of exec.
const userScript = `cd "$1" || exit 1; shift; exec -- "$@"`

// asUser rewrites cmd to run as the user: sudo resets the environment,
// so cmd.Env is handed over through env(1), and the working directory
// (cmd.Dir, or the home directory) is entered by a fixed script that gets
// every value as an argument. A Cmd with Sudo set runs as root, unchanged
// (package command does not call asUser for it).
//
// Whatever its name, the command must run as itself, as through
// Sandbox.Command. cd reads "-" as the previous directory and looks other
// relative names up in CDPATH, so a relative directory is given as
// "./dir". env(1) takes every word holding "=" as one more variable, and
// has no way to end them, so a name holding "=" follows "nice -n 0 --",
// which changes nothing and runs the word after "--" as it is; nice is
// named by its path, which cmd.Env's PATH cannot hide.
func (u *User) asUser(cmd *command.Cmd) (name string, args []string, env map[string]string, dir string) {
	dir = cmd.Dir
	if dir == "" {
		dir = u.home
	}
	if !strings.HasPrefix(dir, "/") {
		dir = "./" + dir
	}
	args = []string{"-u", u.name, "--", "bash", "-c", userScript, "bash", dir}
	if len(cmd.Env) > 0 {
		args = append(args, "env", "--")
		for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
			args = append(args, k+"="+cmd.Env[k])
		}
		if strings.Contains(cmd.Name, "=") {
			args = append(args, "/usr/bin/nice", "-n", "0", "--")
		}
	}
	return "sudo", append(append(args, cmd.Name), cmd.Args...), nil, ""
}

// Command returns a command that runs name with args as the user, as
// Sandbox.Command does: in the user's home directory unless Dir is set,
// with Env handed over through sudo. A command with Sudo set runs as root.
func (u *User) Command(name string, args ...string) *command.Cmd {
	return bindCmd(&command.Cmd{Name: name, Args: args}, u.sb.conn, u.asUser)
}

// run runs cmd attached as the user.
func (u *User) run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	if cmd == nil {
		return nil, (*command.Cmd)(nil).Validate()
	}
	return bindCmd(cmd, u.sb.conn, u.asUser).Run(ctx)
}

// resolve makes p absolute against the home directory.
func (u *User) resolve(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return path.Join(u.home, p)
}

// groups returns the user's primary group and the sandbox default user's
// group, looking them up once.
func (u *User) groups(ctx context.Context) (primary, dflt string, err error) {
	u.mu.Lock()
	primary, dflt = u.primaryGroup, u.defaultGroup
	u.mu.Unlock()
	if primary == "" {
		out, err := u.sb.Command("id", "-gn", "--", u.name).Output(ctx)
		if err != nil {
			return "", "", fmt.Errorf("vercel sandbox: finding the group of user %q: %w", u.name, err)
		}
		primary = strings.TrimSpace(string(out))
	}
	if dflt == "" {
		if _, dflt, err = u.sb.defaultAccount(ctx); err != nil {
			return "", "", err
		}
	}
	u.mu.Lock()
	u.primaryGroup, u.defaultGroup = primary, dflt
	u.mu.Unlock()
	return primary, dflt, nil
}
