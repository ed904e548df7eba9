package isolate

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/osthread"
)

// The host's abstract unix sockets. With the host's network (Spec.Network)
// a sandbox shares the host's network namespace, where abstract unix
// sockets live: no file, so no mount and no permission keeps a command
// from them, and a host service that trusts its peer's uid (SO_PEERCRED)
// would take the command for the server's user. Landlock (ABI 6, Linux
// 6.12) scopes them: a process of a Landlock domain cannot connect or send
// to an abstract socket made outside it. A domain belongs to a thread and
// is inherited by the processes it forks, so every bwrap of an Engine is
// forked by one thread in such a domain, its launcher, which does nothing
// else. bwrap dies with the thread that forked it (Pdeathsig), so the
// launcher lives until the Engine is closed and every sandbox it started
// has been waited for.

// sandboxScopes are what a sandbox's domain is scoped from.
const sandboxScopes = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET

// checkScope reports whether this kernel lets a thread scope the
// abstract unix sockets, by trying it on a thread thrown away; the error
// wraps ErrNoScope with the reason.
func checkScope() error {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS:
		return fmt.Errorf("%w: this kernel has no Landlock; scoping needs Linux 6.12", ErrNoScope)
	case errno == unix.EOPNOTSUPP:
		return fmt.Errorf("%w: Landlock is not enabled (see the kernel's lsm= boot parameter)", ErrNoScope)
	case errno != 0:
		return fmt.Errorf("%w: Landlock: %w", ErrNoScope, errno)
	case abi < 6:
		return fmt.Errorf("%w: Landlock ABI %d; scoping needs ABI 6, Linux 6.12", ErrNoScope, abi)
	}
	done := make(chan error, 1)
	// Never unlocked: the thread ends with the goroutine.
	osthread.Go(func() { done <- restrictThread() })
	if err := <-done; err != nil {
		return fmt.Errorf("%w: %w", ErrNoScope, err)
	}
	return nil
}

// restrictThread puts the calling thread, which the caller has locked for
// good, in a new Landlock domain scoped from sandboxScopes, with
// no-new-privileges (which Landlock needs, and bwrap sets anyway).
func restrictThread() error {
	attr := unix.LandlockRulesetAttr{Scoped: sandboxScopes}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// launcher is the thread, in a scoped Landlock domain, that forks an
// Engine's bwrap processes. live and retired are guarded by Engine.mu.
type launcher struct {
	calls   chan func()
	quit    chan struct{} // closed once retired with nothing live
	live    int           // sandboxes started and not waited for
	retired bool          // no longer the Engine's: it ends when live is 0
}

// newLauncher starts a launcher.
func newLauncher() (*launcher, error) {
	l := &launcher{calls: make(chan func()), quit: make(chan struct{})}
	ready := make(chan error, 1)
	// Never unlocked: the thread ends with the goroutine, and every bwrap
	// it forked with it. It is not the main thread, which the runtime
	// never ends, and whose control group the process's memory is charged
	// to (see package osthread).
	osthread.Go(func() {
		if err := restrictThread(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for {
			select {
			case f := <-l.calls:
				f()
			case <-l.quit:
				return
			}
		}
	})
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("isolate: the launcher's Landlock domain: %w", err)
	}
	return l, nil
}

// acquire returns the launcher that starts the next sandbox, counting
// it live, or nil when sandboxes are not scoped.
func (e *Engine) acquire() (*launcher, error) {
	if e.scopeErr != nil {
		return nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.launch == nil {
		l, err := newLauncher()
		if err != nil {
			return nil, err
		}
		e.launch = l
	}
	e.launch.live++
	return e.launch, nil
}

// release counts a sandbox of l as ended: waited for, or never started.
func (e *Engine) release(l *launcher) {
	if l == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	l.live--
	if l.live == 0 && l.retired {
		close(l.quit)
	}
}

// retire detaches l from e: the next sandbox gets a new launcher, and l
// ends once its sandboxes have. e.mu must be held.
func (e *Engine) retire(l *launcher) {
	if e.launch == l {
		e.launch = nil
	}
	if !l.retired {
		l.retired = true
		if l.live == 0 {
			close(l.quit)
		}
	}
}

// startIn runs g.StartIn(start) on l's thread, or as it is when l is
// nil. A launcher stranded in a sandbox's group (cgroup v1) is retired.
func (e *Engine) startIn(l *launcher, g *cgroup.Cgroup, start func(func(*syscall.SysProcAttr)) error) (born bool, err error) {
	if l == nil {
		return g.StartIn(start)
	}
	done := make(chan struct{})
	l.calls <- func() {
		born, err = g.StartHere(start)
		close(done)
	}
	<-done
	if errors.Is(err, cgroup.ErrStranded) {
		e.mu.Lock()
		e.retire(l)
		e.mu.Unlock()
	}
	return born, err
}

// SocketScope returns nil when the engine's sandboxes cannot reach the
// host's abstract unix sockets, or an error wrapping ErrNoScope that
// says why they can (with the host's network only).
func (e *Engine) SocketScope() error { return e.scopeErr }
