package isolate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// The command's resource limits and control groups must bind the command
// and what it starts, never the init process: a Go runtime under a small
// RLIMIT_AS or RLIMIT_NPROC cannot map memory or create threads and dies,
// and control groups or RLIMIT_CPU would charge the init process's own work
// to the command. Yet the command must not run a single instruction before
// they apply. The init process starts it in one of two ways:
//
//   - traced (startTraced): the command starts under ptrace, which stops it
//     right after its exec, before its first instruction; the init process
//     applies the limits with prlimit, moves it into the control groups and
//     lets it go. This costs a few system calls.
//   - through the exec stage (startExec), where ptrace is not allowed: the
//     init process starts a fresh copy of the program (/proc/self/exe) that
//     joins the control groups, applies the limits to itself and executes
//     the command, doing nothing else. This costs the start of a Go program.

// startCommand starts the command of plan with attr, traced unless
// execStage is set or ptrace is refused.
func startCommand(plan *execPlan, attr *os.ProcAttr, cgroups []*os.File, execStage bool) (*os.Process, error) {
	if !execStage {
		proc, err := startTraced(plan, attr, cgroups)
		// A security module or seccomp filter may refuse ptrace; an exec
		// that fails with EPERM fails the same way in the exec stage.
		if !errors.Is(err, syscall.EPERM) {
			return proc, err
		}
	}
	return startExec(plan, attr, cgroups)
}

// startTraced starts the command stopped after its exec, applies the
// limits, moves it into the control groups and lets it run.
func startTraced(plan *execPlan, attr *os.ProcAttr, cgroups []*os.File) (*os.Process, error) {
	// The tracer is the thread that started the process.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a := *attr
	sys := *attr.Sys
	sys.Ptrace = true
	a.Sys, a.Env = &sys, plan.Env
	proc, err := os.StartProcess(plan.Path, plan.Argv, &a)
	if err != nil {
		return nil, err
	}
	// Failures from here on are final, not a reason to try the exec
	// stage: their errors do not wrap the errno.
	pid := proc.Pid
	kill := func(err error) (*os.Process, error) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		_ = proc.Release()
		return nil, err
	}
	// The exec stops the command with SIGTRAP. A signal that arrived
	// before it stops it first: it is delivered on the way.
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return kill(fmt.Errorf("wait for the exec: %v", err))
		}
		if ws.Exited() || ws.Signaled() {
			_ = proc.Release()
			return nil, errors.New("the command ended before it started")
		}
		if !ws.Stopped() {
			continue
		}
		if sig := ws.StopSignal(); sig != syscall.SIGTRAP {
			if err := syscall.PtraceCont(pid, int(sig)); err != nil {
				return kill(fmt.Errorf("resume: %v", err))
			}
			continue
		}
		break
	}
	for _, rl := range plan.Rlimits {
		lim := syscall.Rlimit{Cur: rl.Cur, Max: rl.Max}
		_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(rl.Resource), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
		if e != 0 {
			return kill(fmt.Errorf("setrlimit %d: %v", rl.Resource, e))
		}
	}
	for _, f := range cgroups {
		if _, err := f.WriteString(strconv.Itoa(pid)); err != nil {
			return kill(fmt.Errorf("join cgroup: %v", err))
		}
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		return kill(fmt.Errorf("detach: %v", err))
	}
	return proc, nil
}

// Descriptors the init process passes to the exec stage.
const (
	planFD     = 3 // the JSON execPlan, then EOF
	statusFD   = 4 // the status messages, then closed by the exec
	cgroupFD0  = 5 // the first cgroup.procs file to join, if any
	execArg0   = "sandbox-exec"
	execMarker = "exec"
)

// execPlan is the command to start and what binds it.
type execPlan struct {
	// Path is the program to execute, Argv its arguments (argv[0]
	// included) and Env its environment.
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	// Rlimits apply to the command from its first instruction.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Cgroups is the number of cgroup.procs files passed from cgroupFD0 on.
	Cgroups int `json:"cgroups,omitempty"`
}

// Status messages of the exec stage. Once everything is prepared, it
// writes statusReady; the descriptor is then closed by the exec, or a failed
// exec or setrlimit reports its errno. A failure before that reports a
// description.
const (
	statusReady  = "."
	statusErrno  = "errno "  // errno
	statusRlimit = "rlimit " // resource errno
	statusError  = "error "  // description
)

// runExec is the exec stage. It returns only when the exec failed.
func runExec() int {
	syscall.CloseOnExec(planFD)
	syscall.CloseOnExec(statusFD)
	fail := func(msg string) int {
		_, _ = syscall.Write(statusFD, []byte(statusError+msg))
		return 127
	}
	data, err := io.ReadAll(os.NewFile(planFD, "plan"))
	if err != nil {
		return fail("read plan: " + err.Error())
	}
	var plan execPlan
	if err := json.Unmarshal(data, &plan); err != nil {
		return fail("decode plan: " + err.Error())
	}
	if len(plan.Argv) == 0 {
		plan.Argv = []string{plan.Path}
	}

	// From the moment RLIMIT_AS is lower than the address space the Go
	// runtime (or the race detector) has reserved, no new mapping can be
	// made: everything the exec needs is prepared now, and execLimited
	// then uses raw system calls only.
	path, err := syscall.BytePtrFromString(plan.Path)
	if err != nil {
		return fail("path: " + err.Error())
	}
	argv, err := syscall.SlicePtrFromStrings(plan.Argv)
	if err != nil {
		return fail("argument: " + err.Error())
	}
	env, err := syscall.SlicePtrFromStrings(plan.Env)
	if err != nil {
		return fail("environment: " + err.Error())
	}
	lims := make([]rlimit, len(plan.Rlimits))
	for i, rl := range plan.Rlimits {
		lims[i] = rlimit{uintptr(rl.Resource), syscall.Rlimit{Cur: rl.Cur, Max: rl.Max}}
	}
	status := make([]byte, 0, 64)

	// The Go runtime raised the soft RLIMIT_NOFILE for itself; the command
	// gets the one this process started with. syscall.Exec restores it
	// before it executes, and fails here on the empty path.
	_ = syscall.Exec("", nil, nil)

	// Join the control groups last, so that little of the exec stage's
	// own memory is charged to them.
	for i := range plan.Cgroups {
		fd := cgroupFD0 + i
		syscall.CloseOnExec(fd)
		// "0" is the writing process itself.
		if _, err := syscall.Write(fd, []byte("0")); err != nil {
			return fail("join cgroup: " + err.Error())
		}
	}
	// From here on nothing can fail unseen: the exec closes the status
	// descriptor, or execLimited writes why it failed.
	if _, err := syscall.Write(statusFD, []byte(statusReady)); err != nil {
		return 127
	}
	execLimited(path, argv, env, lims, status)
	return 127 // not reached
}

// rlimit is a resource limit as execLimited applies it.
type rlimit struct {
	resource uintptr
	lim      syscall.Rlimit
}

// execLimited applies lims and executes path. On failure it writes a
// status message (in the buffer status, which must have room for it) and
// exits. It makes system calls only, without allocating or calling into
// the race detector, so that it works whatever the limits.
//
//go:norace
//go:nosplit
func execLimited(path *byte, argv, env []*byte, lims []rlimit, status []byte) {
	for i := range lims {
		l := &lims[i]
		_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, l.resource, uintptr(unsafe.Pointer(&l.lim)), 0, 0, 0)
		if e != 0 {
			status = append(status, statusRlimit...)
			status = appendUint(status, uint64(l.resource))
			status = append(status, ' ')
			exitStatus(appendUint(status, uint64(e)))
		}
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(path)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&env[0])))
	status = append(status, statusErrno...)
	exitStatus(appendUint(status, uint64(e)))
}

// exitStatus writes msg to the status descriptor and exits at once.
//
//go:norace
//go:nosplit
func exitStatus(msg []byte) {
	syscall.RawSyscall(syscall.SYS_WRITE, statusFD, uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)))
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 127, 0, 0)
}

// appendUint appends the decimal digits of n to b, which must have room.
//
//go:norace
//go:nosplit
func appendUint(b []byte, n uint64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

// execError is how the exec stage failed.
type execError struct {
	errno syscall.Errno // the exec failed with errno
	msg   string        // or for this reason
}

func (e *execError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.errno.Error()
}

func (e *execError) Unwrap() error {
	if e.msg != "" {
		return nil
	}
	return e.errno
}

// parseStatus decodes a status message of the exec stage.
func parseStatus(b []byte) *execError {
	s := string(b)
	if v, ok := strings.CutPrefix(s, statusErrno); ok {
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			return &execError{errno: syscall.Errno(n)}
		}
	}
	if v, ok := strings.CutPrefix(s, statusRlimit); ok {
		res, e, _ := strings.Cut(v, " ")
		if n, err := strconv.ParseUint(e, 10, 32); err == nil {
			return &execError{msg: fmt.Sprintf("setrlimit %s: %v", res, syscall.Errno(n))}
		}
	}
	if v, ok := strings.CutPrefix(s, statusError); ok {
		return &execError{msg: v}
	}
	return &execError{msg: fmt.Sprintf("bad status %q", s)}
}

// startExec starts the exec stage for plan with attr (whose Files are the
// standard descriptors; cgroups are appended) and waits until it has
// executed the command: until the status pipe, closed on exec, reaches its
// end after statusReady. On failure the exec stage has been reaped and the
// error is an *execError.
func startExec(plan *execPlan, attr *os.ProcAttr, cgroups []*os.File) (*os.Process, error) {
	data, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}
	planR, planW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		planR.Close()
		planW.Close()
		return nil, err
	}
	a := *attr
	a.Env = []string{markerEnv + "=" + execMarker, "GOMAXPROCS=1", "GOGC=off"}
	a.Files = append(append(append([]*os.File(nil), attr.Files...), planR, statusW), cgroups...)
	proc, err := os.StartProcess("/proc/self/exe", []string{execArg0}, &a)
	planR.Close()
	statusW.Close()
	if err != nil {
		planW.Close()
		statusR.Close()
		return nil, fmt.Errorf("start the exec stage: %w", err)
	}
	// The exec stage reads the plan to its end before anything else; a
	// write error means it died, which the status shows.
	_, _ = planW.Write(data)
	planW.Close()
	status, err := io.ReadAll(statusR)
	statusR.Close()
	if err == nil && string(status) == statusReady {
		return proc, nil
	}
	st, _ := proc.Wait()
	switch {
	case err != nil:
		return nil, &execError{msg: "read exec status: " + err.Error()}
	case len(status) == 0:
		return nil, &execError{msg: fmt.Sprintf("the exec stage ended early (%v)", st)}
	}
	return nil, parseStatus(bytes.TrimPrefix(status, []byte(statusReady)))
}
