package isolate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/sbx-go/vercel-sandbox/internal/shellexec"
)

// The init process of a sandbox starts here, before any other package of
// the program has initialised.
func init() {
	if len(os.Args) == 0 {
		return
	}
	switch m := os.Getenv(markerEnv); {
	case m == "1" && os.Args[0] == initArg0:
		os.Exit(runInit())
	case m == execMarker && os.Args[0] == execArg0:
		os.Exit(runExec())
	}
}

// Descriptors the parent passes to the init process.
const (
	specFD   = 3 // the JSON initConfig, then EOF
	reportFD = 4 // the JSON report, then closed
	// From 5 on: the cgroup.procs files the command joins.
)

// initConfig is what the parent sends the init process.
type initConfig struct {
	Spec Spec `json:"spec"`
	// Cgroups is the number of cgroup.procs files passed from fd 5 on.
	Cgroups int `json:"cgroups,omitempty"`
	// ExecStage starts the command through the exec stage even where
	// ptrace is allowed.
	ExecStage bool `json:"execStage,omitempty"`
}

// runInit is the init process: it sets the sandbox up, starts the command
// and returns the command's exit status.
func runInit() int {
	syscall.CloseOnExec(specFD)
	syscall.CloseOnExec(reportFD)
	rep := os.NewFile(reportFD, "report")
	fail := func(r report) int {
		_ = json.NewEncoder(rep).Encode(r)
		rep.Close()
		return 125
	}
	specFile := os.NewFile(specFD, "spec")
	data, err := io.ReadAll(specFile)
	specFile.Close()
	if err != nil {
		return fail(report{Error: "read spec: " + err.Error()})
	}
	var cfg initConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fail(report{Error: "decode spec: " + err.Error()})
	}
	spec := cfg.Spec
	cgroups := make([]*os.File, cfg.Cgroups)
	for i := range cgroups {
		syscall.CloseOnExec(cgroupFD0 + i)
		cgroups[i] = os.NewFile(uintptr(cgroupFD0+i), "cgroup.procs")
	}
	// Signals that arrive during setup are delivered to the command later.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)

	if err := setupRoot(&spec); err != nil {
		return fail(report{Error: err.Error()})
	}
	env := spec.Env
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	cwd := spec.Cwd
	if cwd == "" {
		cwd = "/"
	}
	exe, code, msg := shellexec.LookPath(spec.Name, pathEnv, cwd)
	if code != 0 {
		return fail(report{Code: code, Message: msg})
	}
	uid, gid := DefaultUID, DefaultGID
	if spec.Root {
		uid, gid = 0, 0
	}
	devnull, err := os.Open("/dev/null")
	if err != nil {
		return fail(report{Error: "open /dev/null: " + err.Error()})
	}
	attr := &os.ProcAttr{
		Dir:   cwd,
		Files: []*os.File{devnull, os.Stdout, os.Stderr},
		Sys: &syscall.SysProcAttr{
			// A nested user namespace: the command holds no capability
			// over the mounts, so it cannot undo them, even as root.
			Cloneflags:                 syscall.CLONE_NEWUSER,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: 0, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: 0, Size: 1}},
			GidMappingsEnableSetgroups: false,
			Setpgid:                    true,
		},
	}
	plan := &execPlan{
		Path:    exe,
		Argv:    append([]string{spec.Name}, spec.Args...),
		Env:     env,
		Rlimits: spec.Rlimits,
		Cgroups: len(cgroups),
	}
	var proc *os.Process
	for attempt := 0; ; attempt++ {
		proc, err = startCommand(plan, attr, cgroups, cfg.ExecStage)
		// A file just written on the host (a script uploaded to the
		// sandbox) may still be open for writing in a process the host
		// is forking at this moment; that lasts only until it execs.
		if !errors.Is(err, syscall.ETXTBSY) || attempt == 20 {
			break
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
	devnull.Close()
	for _, f := range cgroups {
		f.Close()
	}
	if err != nil {
		if c, m, ok := shellexec.StartFailure(spec.Name, err); ok {
			return fail(report{Code: c, Message: m})
		}
		return fail(report{Error: "start " + spec.Name + ": " + err.Error()})
	}
	pid := proc.Pid
	_ = json.NewEncoder(rep).Encode(report{Pid: pid})
	rep.Close()

	go func() {
		for s := range sigs {
			// The command runs in its own process group.
			_ = syscall.Kill(-pid, s.(syscall.Signal))
		}
	}()
	// Reap every process of the namespace (orphans are re-parented here)
	// until the command itself ends. Returning ends the namespace, and the
	// kernel kills what is left of it.
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 125
		}
		if p != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// forwarded are the signals the init process passes on to the command.
var forwarded = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGCONT, syscall.SIGTSTP,
	syscall.SIGWINCH, syscall.SIGALRM, syscall.SIGPIPE,
}

// systemDirs are mounted read-only from the host (or recreated as the same
// symbolic links).
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcPaths are read-only copies of the host's /etc that programs need.
var etcPaths = []string{
	"resolv.conf", "nsswitch.conf", "host.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"localtime", "services", "protocols", "mime.types", "ssl", "ca-certificates", "pki",
	"crypto-policies", "alternatives", "gai.conf",
}

// devNodes are bound from the host's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// setupRoot builds the sandbox's root filesystem and pivots into it. It
// follows the approach of bubblewrap: a tmpfs on /tmp becomes a staging
// root, the host's root stays reachable at /oldroot while the new root is
// assembled at /newroot, and both are then dropped.
func setupRoot(spec *Spec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount staging tmpfs: %w", err)
	}
	for _, d := range []string{"/tmp/newroot", "/tmp/oldroot"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := syscall.PivotRoot("/tmp", "/tmp/oldroot"); err != nil {
		return fmt.Errorf("pivot_root to staging: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", "/newroot", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,size=16m"); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	const old, nr = "/oldroot", "/newroot"

	for _, d := range systemDirs {
		if err := mirror(old+"/"+d, nr+"/"+d); err != nil {
			return err
		}
	}
	if err := os.Mkdir(nr+"/etc", 0o755); err != nil {
		return err
	}
	for _, e := range etcPaths {
		if err := copyOrBind(old+"/etc/"+e, nr+"/etc/"+e); err != nil {
			return err
		}
	}
	hostname := spec.Hostname
	if hostname == "" {
		hostname = "sandbox"
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/bash\n" +
			fmt.Sprintf("%s:x:%d:%d::/home/%s:/bin/bash\n", DefaultUser, DefaultUID, DefaultGID, DefaultUser) +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group": "root:x:0:\n" + fmt.Sprintf("%s:x:%d:\n", DefaultUser, DefaultGID) +
			"nogroup:x:65534:\n",
		"hostname": hostname + "\n",
		"hosts":    "127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
	}
	for name, content := range files {
		if err := os.WriteFile(nr+"/etc/"+name, []byte(content), 0o644); err != nil {
			return err
		}
	}

	// /dev: a few device nodes from the host, the usual links, and /dev/shm.
	if err := os.Mkdir(nr+"/dev", 0o755); err != nil {
		return err
	}
	for _, n := range devNodes {
		if err := bindFile(old+"/dev/"+n, nr+"/dev/"+n, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, nr+"/dev/"+name); err != nil {
			return err
		}
	}
	if err := os.Mkdir(nr+"/dev/shm", 0o1777); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", nr+"/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777,size=64m"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}

	// /proc of the new PID namespace, with the kernel's tunables read-only.
	if err := os.Mkdir(nr+"/proc", 0o555); err != nil {
		return err
	}
	if err := syscall.Mount("proc", nr+"/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, p := range []string{"sys", "sysrq-trigger", "irq", "bus", "fs"} {
		if err := bindFile(nr+"/proc/"+p, nr+"/proc/"+p, true); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("protect /proc/%s: %w", p, err)
		}
	}

	// The sandbox's own, writable directories.
	for _, m := range spec.Writable {
		if err := bindDir(old+m.Host, nr+cleanAbs(m.Path), false); err != nil {
			return fmt.Errorf("mount %s: %w", m.Path, err)
		}
	}
	for _, m := range spec.ReadOnly {
		src := old + m.Host
		fi, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Path, err)
		}
		if fi.IsDir() {
			err = bindDir(src, nr+cleanAbs(m.Path), true)
		} else {
			err = bindFile(src, nr+cleanAbs(m.Path), true)
		}
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Path, err)
		}
	}

	if err := syscall.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	if spec.Loopback {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring up loopback: %w", err)
		}
	}

	// Drop the host's tree, then make /newroot the root.
	if err := syscall.Unmount(old, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detach host root: %w", err)
	}
	if err := os.Chdir(nr); err != nil {
		return err
	}
	if err := syscall.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detach staging root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	// Nothing outside the mounted directories is writable.
	if err := syscall.Mount("", "/", "", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remount root read-only: %w", err)
	}
	return nil
}

func cleanAbs(p string) string { return path.Clean("/" + p) }

// mirror reproduces the host path src at dst: a symbolic link as the same
// link, a directory or file as a read-only bind mount. A missing src is
// skipped.
func mirror(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		// A link that leads out of the mirrored tree still resolves inside
		// the sandbox when its target is mirrored too.
		return os.Symlink(target, dst)
	}
	if fi.IsDir() {
		return bindDir(src, dst, true)
	}
	return bindFile(src, dst, true)
}

// copyOrBind reproduces src (following links) at dst: a regular file as a
// read-only copy, which costs less than a mount, a directory as a read-only
// bind mount. A missing src is skipped.
func copyOrBind(src, dst string) error {
	fi, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return bindDir(src, dst, true)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o444)
}

// bindDir bind-mounts the directory src at dst, creating dst.
func bindDir(src, dst string, readOnly bool) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return bind(src, dst, readOnly)
}

// bindFile bind-mounts the file src (following links) at dst, creating an
// empty file there first unless src and dst are the same path.
func bindFile(src, dst string, readOnly bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if src != dst {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if fi.IsDir() {
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		} else {
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		}
	}
	return bind(src, dst, readOnly)
}

// bind bind-mounts src at dst (not recursively: mounts below src stay
// hidden) and makes it read-only when asked, keeping the flags the kernel
// locks in a user namespace.
func bind(src, dst string, readOnly bool) error {
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", strings.TrimPrefix(dst, "/newroot"), err)
	}
	if !readOnly {
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dst, &st); err != nil {
		return err
	}
	flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV)
	for _, f := range []struct{ st, ms int64 }{
		{stNoexec, syscall.MS_NOEXEC}, {stNoatime, syscall.MS_NOATIME},
		{stNodiratime, syscall.MS_NODIRATIME}, {stRelatime, syscall.MS_RELATIME},
	} {
		if st.Flags&f.st != 0 {
			flags |= uintptr(f.ms)
		}
	}
	if err := syscall.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", strings.TrimPrefix(dst, "/newroot"), err)
	}
	return nil
}

// statfs flags (ST_* of statvfs(3)).
const (
	stNoexec     = 8
	stNoatime    = 1024
	stNodiratime = 2048
	stRelatime   = 4096
)

// loopbackUp sets the IFF_UP flag of the interface lo.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var req struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req))); e != 0 {
		return e
	}
	req.flags |= syscall.IFF_UP | syscall.IFF_RUNNING
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req))); e != 0 {
		return e
	}
	return nil
}
