package cgroup

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCommandGroup measures what a command's control group adds to
// starting and ending a short command (true), as the host executor uses
// one: a group without limits taken from those kept for reuse, the command
// born in it (StartIn), the group emptied (KillAll) and handed back
// (Release). cpu-ns/op counts this process and the commands.
//
//	go test ./sandbox/local/internal/cgroup -run '^$' -bench CommandGroup -benchtime 2000x -count 6
func BenchmarkCommandGroup(b *testing.B) {
	cgs, err := Find()
	if err != nil {
		b.Skipf("no writable control groups: %v", err)
	}
	b.Cleanup(cgs.Close)
	run := func(b *testing.B, group bool) {
		cpu0 := cpuTime()
		for b.Loop() {
			var g *Cgroup
			if group {
				if g, err = cgs.New(0, -1); err != nil {
					b.Fatal(err)
				}
			}
			c := exec.Command("/bin/true")
			if _, err := g.StartIn(func(into func(*syscall.SysProcAttr)) error {
				c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				into(c.SysProcAttr)
				return c.Start()
			}); err != nil {
				b.Fatal(err)
			}
			if err := c.Wait(); err != nil {
				b.Fatal(err)
			}
			g.KillAll()
			g.Release()
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.Run("none", func(b *testing.B) { run(b, false) })
	b.Run("group", func(b *testing.B) { run(b, true) })
}

// cpuTime is the CPU time of this process and of its children that have
// been waited for.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	var t time.Duration
	for _, tv := range []syscall.Timeval{self.Utime, self.Stime, children.Utime, children.Stime} {
		t += time.Duration(tv.Nano())
	}
	return t
}
