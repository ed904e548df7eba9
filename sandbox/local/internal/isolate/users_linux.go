package isolate

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Several users. bwrap's own user namespace maps one id, so useradd could
// not give a new user an id of its own, nor chown a file to it. An Engine
// with users (EnableUsers) creates one user namespace with a range of ids
// instead, and every bwrap it starts joins it (--userns) before it creates
// the sandbox's other namespaces. Its map:
//
//	sandbox ids 0..999      host ids base+0..base+999
//	sandbox id  1000        the host user running the server
//	sandbox ids 1001..65535 host ids base+1001..base+65535
//
// The default user stays the server's own user, so that the file API and
// the commands share the sandbox's tree as before; root and the users that
// useradd makes own their files as unprivileged host ids that no host
// account uses. Writing such a map needs privilege: the server must run as
// root.
//
// bwrap starts each command as the default user. A command run as root or
// as another user starts as the default user holding only the
// capabilities in rootCaps, and setpriv(1) switches it to its user at
// once: root keeps those capabilities, any other user drops them all.
// The capabilities count only in the sandboxes' user namespace: they act
// on the files the sandbox's own mounts show, never on the host's.

// idBase is the first host id of the range when /etc/subuid names none
// for root: the last 64 Ki ids of the range systemd sets aside for
// containers.
const idBase = 0x6fff0000

// idCount is the number of sandbox ids mapped.
const idCount = 65536

// rootCaps are what root holds in a sandbox: enough for useradd, chown
// and su, nothing that reaches beyond the sandbox's own files and
// processes.
var rootCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_KILL", "CAP_SETUID", "CAP_SETGID", "CAP_NET_BIND_SERVICE"}

// users is the user namespace that an Engine's sandboxes join.
type users struct {
	ns      *os.File // /proc/<pid>/ns/user of the process that made it; closed when unreachable
	base    int
	setpriv string
}

// ErrNoUsers reports that sandboxes cannot have several users here.
var ErrNoUsers = errors.New("isolate: several users per sandbox are unavailable")

// EnableUsers gives the engine's sandboxes a range of user and group ids
// (see Account). It fails, wrapping ErrNoUsers with the reason, when the
// server does not run as root or setpriv is missing; the engine then maps
// one id, as before.
func (e *Engine) EnableUsers() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: mapping a range of ids needs a server running as root "+
			"(this one runs as uid %d, and an unprivileged user namespace maps one id)", ErrNoUsers, os.Geteuid())
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return fmt.Errorf("%w: setpriv (util-linux) is not installed: %w", ErrNoUsers, err)
	}
	base := subordinateBase("/etc/subuid", "root")
	if b := subordinateBase("/etc/subgid", "root"); b != base {
		base = idBase
	}
	ns, err := newUserns(base)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoUsers, err)
	}
	e.users = &users{ns: ns, base: base, setpriv: setpriv}
	return nil
}

// Users reports whether the engine's sandboxes have several users.
func (e *Engine) Users() bool { return e.users != nil }

// HostID returns the host id behind the sandbox's user or group id id,
// or -1 when the engine maps one id only or id is outside the range.
func (e *Engine) HostID(id int) int {
	switch {
	case e.users == nil || id < 0 || id >= idCount:
		return -1
	case id == DefaultUID:
		return os.Geteuid()
	}
	return e.users.base + id
}

// subordinateBase returns the first id of name's range of at least idCount
// ids in file (/etc/subuid or /etc/subgid), or idBase.
func subordinateBase(file, name string) int {
	f, err := os.Open(file)
	if err != nil {
		return idBase
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(p) != 3 || p[0] != name {
			continue
		}
		start, err1 := strconv.Atoi(p[1])
		n, err2 := strconv.Atoi(p[2])
		if err1 == nil && err2 == nil && start > 0 && n >= idCount {
			return start
		}
	}
	return idBase
}

// newUserns creates the user namespace, with the map above, in which no
// further user namespace can be made, and returns it. A short-lived
// process makes it; the descriptor keeps it.
func newUserns(base int) (*os.File, error) {
	m := []syscall.SysProcIDMap{
		{ContainerID: 0, HostID: base, Size: DefaultUID},
		{ContainerID: DefaultUID, HostID: os.Geteuid(), Size: 1},
		{ContainerID: DefaultUID + 1, HostID: base + DefaultUID + 1, Size: idCount - DefaultUID - 1},
	}
	g := append([]syscall.SysProcIDMap(nil), m...)
	g[1].HostID = os.Getegid()
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	defer w.Close()
	// max_user_namespaces 0: a sandbox cannot make a user namespace of its
	// own (bwrap's --disable-userns does the same in its own namespace).
	c := exec.Command(sh, "-c", "echo 0 >/proc/sys/user/max_user_namespaces && echo ok && exec cat")
	c.Stdin = r
	var out strings.Builder
	c.Stderr = &out
	ready, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ready.Close()
	c.Stdout = readyW
	c.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                m,
		GidMappings:                g,
		GidMappingsEnableSetgroups: true,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0},
		Pdeathsig:                  syscall.SIGKILL,
	}
	err = c.Start()
	readyW.Close()
	if err != nil {
		return nil, fmt.Errorf("create a user namespace: %w", err)
	}
	defer func() {
		w.Close()
		_ = c.Wait()
	}()
	var buf [3]byte
	if n, _ := ready.Read(buf[:]); string(buf[:n]) != "ok\n" {
		return nil, fmt.Errorf("set up a user namespace: %s", strings.TrimSpace(out.String()))
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", c.Process.Pid))
	if err != nil {
		return nil, fmt.Errorf("open a user namespace: %w", err)
	}
	return ns, nil
}

// account is the account spec runs as when it is not the default user.
func (spec *Spec) account() *Account {
	switch {
	case spec.As != nil:
		return spec.As
	case spec.Root:
		return &Account{}
	}
	return nil
}

// switchUser has bwrap start the command with rootCaps and setpriv run
// path as acct: root keeps the capabilities, another user drops them.
// Either gets the supplementary groups /etc/group gives it.
func (e *Engine) switchUser(a []string, acct Account, path string, args []string) ([]string, string, []string) {
	for _, c := range rootCaps {
		a = append(a, "--cap-add", c)
	}
	sp := []string{"--reuid", strconv.Itoa(acct.UID), "--regid", strconv.Itoa(acct.GID), "--init-groups"}
	if acct.UID != 0 {
		sp = append(sp, "--inh-caps=-all", "--ambient-caps=-all")
	}
	sp = append(sp, "--", path)
	return a, e.users.setpriv, append(sp, args...)
}
