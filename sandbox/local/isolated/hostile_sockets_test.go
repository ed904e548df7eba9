//go:build linux

package isolated_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
)

// The unix socket probes. Under allow-all a sandbox shares the host's
// network namespace, where abstract unix sockets live (no file, no
// permission check): a host service that trusts its peer's uid
// (SO_PEERCRED) would take a command, whose default user is the server's
// host user, for that user. The sandbox's Landlock domain keeps it from
// every abstract socket made outside the sandbox.

// sockProbe is a program run inside the sandbox: "dial NET ADDR" connects
// and writes a line; "bind PATH" leaves a socket file at PATH; "self NAME" serves abstract sockets of its own (a
// stream and a datagram one) and talks to them.
const sockProbe = `package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
)

func main() {
	switch os.Args[1] {
	case "dial":
		c, err := net.Dial(os.Args[2], os.Args[3])
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		_, err = fmt.Fprintln(c, "hostile")
		fmt.Println("connected, write:", err)
	case "bind":
		ln, err := net.Listen("unix", os.Args[2])
		if err != nil {
			fmt.Println("failed:", err)
			os.Exit(1)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		fmt.Println("bound")
	case "self":
		if err := self(os.Args[2]); err != nil {
			fmt.Println("failed:", err)
			os.Exit(1)
		}
		fmt.Println("ok")
	}
}

func self(name string) error {
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprint(c, "echo "+line)
		c.Close()
	}()
	c, err := net.Dial("unix", "@"+name)
	if err != nil {
		return err
	}
	fmt.Fprintln(c, "ping")
	if reply, err := bufio.NewReader(c).ReadString('\n'); err != nil || reply != "echo ping\n" {
		return fmt.Errorf("stream reply %q: %v", reply, err)
	}
	pc, err := net.ListenPacket("unixgram", "@"+name+".dgram")
	if err != nil {
		return err
	}
	defer pc.Close()
	d, err := net.Dial("unixgram", "@"+name+".dgram")
	if err != nil {
		return err
	}
	if _, err := d.Write([]byte("dgram")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "dgram" {
		return fmt.Errorf("datagram %q: %v", buf[:n], err)
	}
	return nil
}
`

// withSockProbe builds sockProbe, statically, uploads it into h's sandbox
// at /vercel/sandbox/sockprobe and gives the sandbox the host's network.
func (h *hostile) withSockProbe() {
	t := h.t
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("SKIPPED: the probe program needs the go command: %v", err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(sockProbe), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module sockprobe\n\ngo 1.22\n"), 0o644))
	build := exec.Command(goBin, "build", "-o", "sockprobe", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the probe program: %v\n%s", err, out)
	}
	entry, err := files.FromFile("/vercel/sandbox/sockprobe", filepath.Join(dir, "sockprobe"))
	require.NoError(t, err)
	require.NoError(t, h.sb.FS().WriteFiles(t.Context(), []files.Entry{entry}, files.WriteParams{}))
	_, err = h.sb.SetNetworkPolicy(t.Context(), sandbox.AllowAll())
	require.NoError(t, err)
}

// newSocketHostile is newHostile without a memory limit, which a Go
// program cannot start under where it is an address space limit (no
// memory cgroup).
func newSocketHostile(t *testing.T) *hostile {
	t.Helper()
	return newHostileOn(t, newIsolated(t, isolated.Memory(0), isolated.Procs(128)))
}

// probeName is a fresh name for an abstract socket.
func probeName() string { return fmt.Sprintf("sbx-probe-%016x", rand.Uint64()) }

func TestProbeHostAbstractSocket(t *testing.T) {
	t.Parallel()
	h := newSocketHostile(t)
	if ok, why := h.iso.ScopedSockets(); !ok {
		t.Skip("SKIPPED: commands reach the host's abstract unix sockets here: " + why)
	}
	h.withSockProbe()
	name := probeName()

	// A host service that would trust its peer's uid.
	ln, err := net.Listen("unix", "@"+name)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	dgram, err := net.ListenPacket("unixgram", "@"+name+".dgram")
	require.NoError(t, err)
	t.Cleanup(func() { dgram.Close() })

	for _, sudo := range []bool{false, true} {
		for _, netw := range []string{"unix", "unixgram"} {
			addr := "@" + name
			if netw == "unixgram" {
				addr += ".dgram"
			}
			res := h.bash("/vercel/sandbox/sockprobe dial "+netw+" "+addr, sudo)
			assert.NotEqual(t, 0, res.ExitCode(), "sudo=%v %s: %s", sudo, netw, res.Stdout)
			assert.Contains(t, string(res.Stdout), "operation not permitted", "sudo=%v %s: Landlock refuses (EPERM)", sudo, netw)
		}
	}
	// What the commands got through is queued by now: a connection is
	// complete, a datagram delivered, when the sender's call returns.
	assertNoConnection(t, ln, "the host's abstract socket")
	require.NoError(t, dgram.SetReadDeadline(time.Now().Add(time.Second)))
	buf := make([]byte, 64)
	n, _, err := dgram.ReadFrom(buf)
	if err == nil {
		t.Fatalf("the host's abstract datagram socket received %q from a sandboxed command", buf[:n])
	}
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

// peerUID is the uid of the process at the other end of c (SO_PEERCRED).
func peerUID(c net.Conn) string {
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return err.Error()
	}
	uid := "unknown"
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid = fmt.Sprint(cred.Uid)
		}
	})
	return uid
}

func TestProbeOwnAbstractSockets(t *testing.T) {
	t.Parallel()
	h := newSocketHostile(t)
	h.withSockProbe()
	for _, sudo := range []bool{false, true} {
		res := h.bash("/vercel/sandbox/sockprobe self "+probeName(), sudo)
		assert.Equal(t, 0, res.ExitCode(), "sudo=%v: %s%s", sudo, res.Stdout, res.Stderr)
		assert.Equal(t, "ok\n", string(res.Stdout), "sudo=%v: a command serves and reaches its own abstract sockets", sudo)
	}
}

func TestProbeHostPathSockets(t *testing.T) {
	t.Parallel()
	h := newSocketHostile(t)
	h.withSockProbe()
	// A host socket in the host's temporary directory, where an X server
	// keeps its own (/tmp/.X11-unix).
	host := filepath.Join(os.TempDir(), probeName())
	ln, err := net.Listen("unix", host)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	// The sandbox's own socket, so that the search is seen to find one.
	own := "/tmp/own.sock"
	res := h.bash(fmt.Sprintf(`/vercel/sandbox/sockprobe bind %s; /vercel/sandbox/sockprobe dial unix %s; `+
		`echo ==; find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type s -print 2>/dev/null; true`, own, host), true)
	before, list, ok := strings.Cut(string(res.Stdout), "==\n")
	require.True(t, ok, "%s%s", res.Stdout, res.Stderr)
	assert.Contains(t, before, "refused:", "the host's socket is not reachable by its path")
	assertNoConnection(t, ln, "the host's socket")
	for _, p := range strings.Fields(list) {
		top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		assert.Contains(t, []string{"vercel", "tmp", "home", "root", "shared"}, top,
			"a socket file outside the sandbox's own tree: %s", p)
	}
	assert.Contains(t, strings.Fields(list), own, "the search finds the sandbox's own socket")
}
