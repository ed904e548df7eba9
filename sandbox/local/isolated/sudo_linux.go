package isolated

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/isolate"
)

// sudo. Inside a sandbox no program can gain privileges (no new
// privileges, and the seccomp filter), so a sudo binary could not work
// there. The executor plays sudo instead, as the sandbox's /etc/sudoers
// on the real image allows the default user: a command whose name is
// sudo runs the command that follows its options as root or, with -u, as
// the named user of the sandbox's own /etc/passwd, with sudo's fresh
// environment. sudo inside a script is not played.

// sudoRun is a command that sudo runs.
type sudoRun struct {
	user   string   // "" or "root": root
	name   string   // the command
	args   []string // its arguments
	errMsg string   // why sudo refuses, when it does
}

// parseSudo reads sudo's command line: options -u USER (or --user=USER),
// the ignored -n, -E, -H, -S, -k and -P, then "--" or the command.
func parseSudo(args []string) sudoRun {
	var r sudoRun
options:
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			args = args[1:]
			break options
		case a == "-u" && len(args) > 1:
			r.user, args = args[1], args[2:]
			continue
		case strings.HasPrefix(a, "--user="):
			r.user = strings.TrimPrefix(a, "--user=")
		case strings.HasPrefix(a, "-u") && len(a) > 2:
			r.user = a[2:]
		case a == "-n", a == "-E", a == "-H", a == "-S", a == "-k", a == "-P":
		case strings.HasPrefix(a, "-"):
			r.errMsg = "sudo: option " + a + " is not supported in an isolated sandbox\n"
			return r
		default:
			break options
		}
		args = args[1:]
	}
	if len(args) == 0 {
		r.errMsg = "usage: sudo [-u user] [--] command [arg ...]\n"
		return r
	}
	r.name, r.args = args[0], args[1:]
	return r
}

// passwdEntry is a user of a sandbox's /etc/passwd.
type passwdEntry struct {
	name, home, shell string
	acct              isolate.Account
}

// lookupUser finds user (a name or #uid) in the passwd file of etcDir,
// read through an os.Root.
func lookupUser(etcDir, user string) (passwdEntry, error) {
	root, err := os.OpenRoot(etcDir)
	if err != nil {
		return passwdEntry{}, err
	}
	defer root.Close()
	f, err := root.Open("passwd")
	if err != nil {
		return passwdEntry{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), ":")
		if len(p) != 7 || p[0] != user && "#"+p[2] != user {
			continue
		}
		uid, err1 := strconv.Atoi(p[2])
		gid, err2 := strconv.Atoi(p[3])
		if err1 != nil || err2 != nil {
			continue
		}
		return passwdEntry{name: p[0], home: p[5], shell: p[6], acct: isolate.Account{UID: uid, GID: gid}}, nil
	}
	return passwdEntry{}, fmt.Errorf("unknown user %s", user)
}

// asSudo rewrites a command named sudo into the command sudo would run,
// and returns the account it runs as (nil: root). A message means sudo
// refuses, with exit code 1.
func (e *Executor) asSudo(cmd *local.Cmd) (run *local.Cmd, as *passwdEntry, msg string) {
	r := parseSudo(cmd.Args)
	if r.errMsg != "" {
		return nil, nil, r.errMsg
	}
	c := *cmd
	c.Name, c.Args, c.Sudo, c.Env = r.name, r.args, true, nil
	if r.user == "" || r.user == "root" || r.user == "#0" {
		return &c, nil, ""
	}
	if !e.engine.Users() {
		return nil, nil, "sudo: cannot run commands as another user in this sandbox: " + e.usersReason + "\n"
	}
	if cmd.EtcDir == "" {
		return nil, nil, "sudo: the sandbox has no /etc of its own\n"
	}
	ent, err := lookupUser(cmd.EtcDir, r.user)
	if err != nil {
		return nil, nil, "sudo: " + err.Error() + "\n"
	}
	c.Sudo = false
	return &c, &ent, ""
}

// giveToRoot makes name, in tree, the sandbox root's when the server made
// it.
func (e *Executor) giveToRoot(tree *os.Root, name string) {
	fi, err := tree.Lstat(name)
	if err != nil {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() {
		id := e.engine.HostID(0)
		_ = tree.Lchown(name, id, id)
	}
}
