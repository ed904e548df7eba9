package isolate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// Options are the parent's side of a sandbox: what the init process is
// started with.
type Options struct {
	// Network keeps the host's network namespace; otherwise the sandbox
	// gets its own, with only a loopback interface.
	Network bool
	// Cgroup, when not nil, receives the command (and so every process it
	// starts) before it executes; the init process stays outside.
	Cgroup *Cgroup
	// Stdout and Stderr receive the command's output.
	Stdout, Stderr *os.File

	// execStage starts the command through the exec stage even where
	// ptrace is allowed, to test it.
	execStage bool
}

// Process is a running sandbox: its init process and the command under it.
type Process struct {
	cmd *exec.Cmd
	// Pid is the host pid of the init process.
	Pid int
}

// Start starts spec in new namespaces. It returns once the command has
// started inside, or a *StartError when the command could not be started
// as a shell would report it, or another error when the sandbox could not
// be set up.
func Start(spec *Spec, o Options) (*Process, error) {
	var cgroups []*os.File
	if o.Cgroup != nil {
		var err error
		if cgroups, err = o.Cgroup.procsFiles(); err != nil {
			return nil, err
		}
	}
	defer func() {
		for _, f := range cgroups {
			f.Close()
		}
	}()
	data, err := json.Marshal(initConfig{Spec: *spec, Cgroups: len(cgroups), ExecStage: o.execStage})
	if err != nil {
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, err
	}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC)
	if !o.Network {
		flags |= syscall.CLONE_NEWNET
	}
	// The init process runs with one thread and no garbage collection: it
	// is short-lived and small, and every thread costs on start.
	c := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{initArg0},
		Env:        []string{markerEnv + "=1", "GOMAXPROCS=1", "GOGC=off"},
		Dir:        "/",
		Stdout:     fileOrNil(o.Stdout),
		Stderr:     fileOrNil(o.Stderr),
		ExtraFiles: append([]*os.File{specR, repW}, cgroups...),
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
			Setpgid:                    true,
			Pdeathsig:                  syscall.SIGKILL,
		},
	}
	err = c.Start()
	specR.Close()
	repW.Close()
	if err != nil {
		specW.Close()
		repR.Close()
		return nil, fmt.Errorf("%w: start init process: %w", ErrUnavailable, err)
	}
	p := &Process{cmd: c, Pid: c.Process.Pid}
	abort := func(err error) (*Process, error) {
		specW.Close()
		repR.Close()
		_ = c.Process.Kill()
		_ = c.Wait()
		return nil, err
	}
	// The init process reads the spec to its end before it does anything.
	if _, err := specW.Write(data); err != nil {
		return abort(fmt.Errorf("isolate: send spec: %w", err))
	}
	specW.Close()
	out, err := io.ReadAll(repR)
	repR.Close()
	if err != nil {
		return abort(fmt.Errorf("isolate: read report: %w", err))
	}
	var rep report
	if len(out) == 0 {
		_ = c.Wait()
		return nil, fmt.Errorf("isolate: the init process exited during setup (%v)", c.ProcessState)
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return abort(fmt.Errorf("isolate: bad report %q: %w", out, err))
	}
	switch {
	case rep.Error != "":
		_ = c.Wait()
		return nil, fmt.Errorf("isolate: set up sandbox: %s", rep.Error)
	case rep.Code != 0:
		_ = c.Wait()
		return nil, &StartError{Code: rep.Code, Message: rep.Message}
	}
	return p, nil
}

func fileOrNil(f *os.File) io.Writer {
	if f == nil {
		return nil
	}
	return f
}

// Signal sends sig to the sandbox's init process, which passes it on to the
// command's process group; SIGKILL ends the whole sandbox at once.
func (p *Process) Signal(sig syscall.Signal) error {
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Wait waits for the sandbox to end and returns the command's exit code:
// its status, or 128+signal when it was killed by a signal (the init process
// reports it so, and a killed init process is reported the same way).
func (p *Process) Wait() (int, error) {
	err := p.cmd.Wait()
	st := p.cmd.ProcessState
	if st == nil {
		return -1, err
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// report is what the init process tells its parent once the command has
// started, or why it has not.
type report struct {
	Pid     int    `json:"pid,omitempty"`
	Error   string `json:"error,omitempty"`
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// markerEnv is the environment variable that makes a re-executed binary an
// init process.
const markerEnv = "SBX_ISOLATE_INIT"

// initArg0 is argv[0] of the init process, as ps shows it.
const initArg0 = "sandbox-init"
