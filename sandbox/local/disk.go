package local

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// DefaultDiskQuota is the disk quota of each sandbox of a server made
// without WithDiskQuota.
const DefaultDiskQuota = 8 << 30 // bytes

// diskCheckInterval is how often, at least, a session's disk usage is
// measured while one of its commands runs.
const diskCheckInterval = 100 * time.Millisecond

// WithDiskQuota bounds the disk that the files of each sandbox take to n
// bytes (default DefaultDiskQuota); zero or less removes the bound.
//
// Usage is what the files take on disk (their blocks), so a sparse file
// counts by the bytes it holds, not by its length. An upload counts by
// its decompressed size and is refused (400, "disk quota") when it would
// pass the quota. Commands are checked while they run, every 100 ms or so:
// when a session is over its quota, its running commands are killed
// (exit code 137) with a message on standard error. A command can thus
// pass the quota by what it writes between two checks, and not more.
func WithDiskQuota(n int64) Option {
	return func(c *config) { c.diskQuota, c.diskQuotaSet = n, true }
}

// quota returns the configured disk quota per sandbox, 0 for none.
func (c *config) quota() int64 {
	if !c.diskQuotaSet {
		return DefaultDiskQuota
	}
	return max(c.diskQuota, 0)
}

// errQuota reports an upload that would pass the disk quota.
var errQuota = errors.New("disk quota reached")

// diskUsage returns the bytes that the files under dir take on disk. It
// never follows a symbolic link; entries that vanish while it walks are
// skipped.
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		total += onDisk(info)
		return nil
	})
	return total, err
}

// uploadRoom returns how many decompressed bytes an upload into sb may
// add, or -1 when there is no quota.
func (s *Server) uploadRoom(sb *sandboxRec) (int64, error) {
	q := s.cfg.quota()
	if q == 0 {
		return -1, nil
	}
	used, err := diskUsage(sb.dir)
	if err != nil {
		return 0, err
	}
	if used >= q {
		return 0, fmt.Errorf("%w: the sandbox's files take %d bytes of its %d", errQuota, used, q)
	}
	return q - used, nil
}

// watchDisk starts measuring the disk usage of sess, unless that already
// runs, and kills its commands when the sandbox is over its quota. The
// watcher ends once no command of the session is left running, or with
// the session; Close waits for it. Called with s.mu held, when a command
// is registered.
func (s *Server) watchDisk(sess *sessionRec) {
	q := s.cfg.quota()
	if q == 0 || sess.diskWatched {
		return
	}
	sess.diskWatched = true
	s.diskWG.Add(1)
	go func() {
		defer s.diskWG.Done()
		wait := diskCheckInterval
		for {
			t := time.NewTimer(wait)
			select {
			case <-sess.ctx.Done():
				t.Stop()
				s.mu.Lock()
				sess.diskWatched = false
				s.mu.Unlock()
				return
			case <-t.C:
			}
			running, pending := s.liveCommands(sess)
			if !pending {
				return // liveCommands cleared diskWatched
			}
			if len(running) == 0 {
				continue
			}
			began := time.Now()
			used, err := diskUsage(sess.sb.dir)
			// A large tree is measured less often, so that measuring costs
			// at most a twentieth of the time.
			wait = max(diskCheckInterval, 20*time.Since(began))
			if err != nil || used <= q {
				continue
			}
			msg := fmt.Sprintf("\nlocal: disk quota of %d bytes reached (the sandbox's files take %d): command killed\n", q, used)
			for _, r := range running {
				_ = r.c.out.append(streamStderr, []byte(msg))
				_ = r.proc.Signal(signalKill)
			}
		}
	}()
}

// runningCommand is a command that has started and not ended, and its
// process (which the command drops once it has ended).
type runningCommand struct {
	c    *commandRec
	proc Process
}

// liveCommands returns the running commands of sess, and whether any
// command of it has not ended yet (started or about to start). When none
// is left it marks the session as no longer watched.
func (s *Server) liveCommands(sess *sessionRec) (running []runningCommand, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range sess.commands {
		if c.exitCode == nil {
			pending = true
			if c.proc != nil {
				running = append(running, runningCommand{c, c.proc})
			}
		}
	}
	if !pending {
		sess.diskWatched = false
	}
	return running, pending
}

// runningCommands returns the commands of sess that have started and not
// ended.
func (s *Server) runningCommands(sess *sessionRec) []runningCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []runningCommand
	for _, c := range sess.commands {
		if c.exitCode == nil && c.proc != nil {
			out = append(out, runningCommand{c, c.proc})
		}
	}
	return out
}
