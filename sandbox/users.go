package sandbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Users and groups are made with the image's shadow tools (useradd,
// groupadd, usermod, gpasswd) run with sudo, the way the official SDK
// makes them, so a sandbox made by either SDK looks the same: a user gets
// /home/<name>, owned by it and group-owned by the sandbox's default
// user's group with mode 770 (so the file API can still reach it); a group
// gets a shared directory /shared/<name> with mode 2770.

// Sentinels matched by errors.Is against an *AccountError.
var (
	ErrUserExists  = errors.New("user already exists")
	ErrGroupExists = errors.New("group already exists")
	ErrNoSuchUser  = errors.New("no such user")
	ErrNoSuchGroup = errors.New("no such group")
)

// AccountError is a user or group call that the sandbox refused. Err is
// one of the sentinels above when the refusal is recognised; the
// *command.ExitError of the tool is reachable with errors.As, and a
// refusal for lack of rights matches fs.ErrPermission.
type AccountError struct {
	Op      string // "create user", "create group", "add user to group", ...
	User    string // the user concerned, if any
	Group   string // the group concerned, if any
	Message string // the tool's last line of error output
	Err     error  // a sentinel, or nil
	exit    error
}

// Error implements error.
func (e *AccountError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vercel sandbox: %s", e.Op)
	for _, n := range []struct{ kind, name string }{{"user", e.User}, {"group", e.Group}} {
		if n.name != "" {
			fmt.Fprintf(&b, " %s %q", n.kind, n.name)
		}
	}
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, ": %v", e.Err)
	case e.Message != "":
		fmt.Fprintf(&b, ": %s", e.Message)
	case e.exit != nil:
		fmt.Fprintf(&b, ": %v", e.exit)
	}
	return b.String()
}

// Unwrap returns the sentinel and the underlying failure.
func (e *AccountError) Unwrap() []error {
	var out []error
	for _, err := range []error{e.Err, e.exit} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// accountName is what the official SDK accepts: a safe subset of the
// names useradd takes.
var accountName = regexp.MustCompile(`^[a-z_][a-z0-9_-]*$`)

func validateAccount(field, name string) error {
	switch {
	case name == "":
		return apierr.Invalid(field, "empty")
	case len(name) > 32:
		return apierr.Invalid(field, "%q is longer than 32 characters", name)
	case !accountName.MatchString(name):
		return apierr.Invalid(field, "%q must be lowercase letters, digits, '-' and '_', not starting with a digit or '-'", name)
	}
	return nil
}

// accountCmd runs one account tool as root. exists is the exit code the
// tool uses for "name already in use" (9 for useradd and groupadd), and
// existsErr the sentinel it stands for.
func (s *Sandbox) accountCmd(ctx context.Context, e AccountError, existsErr error, name string, args ...string) error {
	_, err := s.run(ctx, &command.Cmd{Name: name, Args: args, Sudo: true})
	var exit *command.ExitError
	if err == nil || !errors.As(err, &exit) {
		return err
	}
	// The tool's message also names an errno (EACCES, EPERM, ...).
	msg := string(exit.Stderr)
	e.Message, e.exit = lastLine(msg), toolError(err, msg)
	switch {
	case exit.ExitCode() == 9 && existsErr != nil:
		e.Err = existsErr
	case e.User != "" && strings.Contains(msg, "user '"+e.User+"' does not exist"),
		e.User != "" && strings.Contains(msg, "unknown user"):
		e.Err = ErrNoSuchUser
	case e.Group != "" && strings.Contains(msg, "group '"+e.Group+"' does not exist"):
		e.Err = ErrNoSuchGroup
	}
	return &e
}

// defaultAccount returns the user and primary group that commands without
// sudo and the file API run as.
func (s *Sandbox) defaultAccount(ctx context.Context) (user, group string, err error) {
	out, err := s.Command("sh", "-c", "id -un; id -gn").Output(ctx)
	if err != nil {
		return "", "", fmt.Errorf("vercel sandbox: finding the default user: %w", err)
	}
	user, group, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	if user == "" || group == "" {
		return "", "", fmt.Errorf("vercel sandbox: finding the default user: unexpected answer %q", out)
	}
	return user, group, nil
}

// CreateUser creates a Linux user with a home directory, /home/<name>,
// and returns a handle that acts as it. Names are lowercase letters,
// digits, '-' and '_' (at most 32), checked before any request. A name in
// use gives an *AccountError matching ErrUserExists.
func (s *Sandbox) CreateUser(ctx context.Context, name string) (*User, error) {
	if err := validateAccount("name", name); err != nil {
		return nil, err
	}
	_, group, err := s.defaultAccount(ctx)
	if err != nil {
		return nil, err
	}
	home := "/home/" + name
	steps := []struct {
		tool string
		args []string
	}{
		{"useradd", []string{"-m", "-s", "/bin/bash", "--", name}},
		{"chown", []string{name + ":" + group, "--", home}},
		{"chmod", []string{"770", "--", home}},
	}
	for _, st := range steps {
		if err := s.accountCmd(ctx, AccountError{Op: "create user", User: name}, ErrUserExists, st.tool, st.args...); err != nil {
			return nil, err
		}
	}
	return &User{sb: s, name: name, home: home, defaultGroup: group}, nil
}

// Group is a Linux group made by CreateGroup.
type Group struct {
	Name string
	// SharedDir is /shared/<name>: owned by the sandbox's default user and
	// the group, mode 2770, so files made in it belong to the group.
	SharedDir string
}

// CreateGroup creates a Linux group and its shared directory. A name in
// use gives an *AccountError matching ErrGroupExists.
func (s *Sandbox) CreateGroup(ctx context.Context, name string) (Group, error) {
	if err := validateAccount("name", name); err != nil {
		return Group{}, err
	}
	user, _, err := s.defaultAccount(ctx)
	if err != nil {
		return Group{}, err
	}
	g := Group{Name: name, SharedDir: "/shared/" + name}
	steps := []struct {
		tool string
		args []string
	}{
		{"groupadd", []string{"--", name}},
		{"mkdir", []string{"-p", "--", g.SharedDir}},
		{"chown", []string{user + ":" + name, "--", g.SharedDir}},
		{"chmod", []string{"2770", "--", g.SharedDir}},
	}
	for _, st := range steps {
		if err := s.accountCmd(ctx, AccountError{Op: "create group", Group: name}, ErrGroupExists, st.tool, st.args...); err != nil {
			return Group{}, err
		}
	}
	return g, nil
}

// AddToGroup adds the user to a supplementary group (usermod -aG). An
// unknown user or group gives an *AccountError matching ErrNoSuchUser or
// ErrNoSuchGroup.
func (u *User) AddToGroup(ctx context.Context, group string) error {
	if err := validateAccount("group", group); err != nil {
		return err
	}
	return u.sb.accountCmd(ctx, AccountError{Op: "add to group", User: u.name, Group: group}, nil, "usermod", "-aG", group, "--", u.name)
}

// RemoveFromGroup removes the user from a supplementary group (gpasswd
// -d).
func (u *User) RemoveFromGroup(ctx context.Context, group string) error {
	if err := validateAccount("group", group); err != nil {
		return err
	}
	return u.sb.accountCmd(ctx, AccountError{Op: "remove from group", User: u.name, Group: group}, nil, "gpasswd", "-d", u.name, group)
}
