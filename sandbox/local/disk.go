package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultDiskQuota is the disk quota of each sandbox of a server made
// without WithDiskQuota.
const DefaultDiskQuota = 8 << 30 // bytes

// diskCheckInterval is how often, at least, a session's disk usage is
// measured while one of its commands runs.
const diskCheckInterval = 100 * time.Millisecond

// WithDiskQuota bounds the disk that the files of each sandbox take to n
// bytes; zero or less removes the bound. Without it each sandbox's files
// are watched against DefaultDiskQuota, as described below for systems
// that cannot hold a quota, which costs nothing when a sandbox is made.
//
// Where the server runs as root on Linux with loop devices and mkfs.ext4,
// the quota is held by the kernel: each sandbox's directory is the mount
// point of an ext4 file system of its own, on a sparse image of
// n + n/16 + 1 MiB (the margin is what the file system's own records
// take, so that the files get about n). Whatever a command does (write,
// fallocate, a sparse file, a terminal, a command run as root), it gets
// ENOSPC ("No space left on device") once the sandbox is full, as on a
// full disk, and the host never holds more than the image for the
// sandbox. Images take on the host what has been written into them, in
// the server's directory; a delete removes its sandbox's image, and Close
// unmounts every image (and removes them with the server's directory when
// it made it). A server that holds quotas unmounts what a crashed one left
// mounted, as long as that one's directory is still there.
// Each such sandbox costs a loop device and a mount (see docs/scale.md);
// DiskQuotaHeld reports whether the server holds its quota.
//
// Elsewhere the quota is watched: usage is what the files take on disk
// (their blocks), measured every 100 ms or so while a command runs, and
// when a session is over its quota its running commands, those of its
// terminals included, are killed (exit code 137) with a message on
// standard error (or the terminal). A command can thus pass the quota by
// what it writes between two checks, and what it wrote stays until it is
// removed.
//
// Either way, an upload counts by its decompressed size and is refused
// (400, "disk quota") when it would pass the quota, and snapshots are
// copies kept outside the sandbox's quota.
func WithDiskQuota(n int64) Option {
	return func(c *config) { c.diskQuota, c.diskQuotaSet = n, true }
}

// DiskQuotaHeld reports whether the kernel holds each sandbox's disk
// quota (see WithDiskQuota) and, when it does not, why.
func (s *Server) DiskQuotaHeld() (held bool, why string) {
	if s.disks != nil {
		return true, ""
	}
	return false, s.disksWhy
}

// openDisks decides how the server keeps its quota: held by a file system
// per sandbox when one was set and this system can, else watched.
func (s *Server) openDisks() {
	q := s.cfg.quota()
	switch {
	case q == 0:
		s.disksWhy = "no disk quota"
	case !s.cfg.diskQuotaSet:
		s.disksWhy = "the default disk quota is watched; WithDiskQuota has it held"
	case s.cfg.watchDisk:
		s.disksWhy = "disk quota watched, as asked"
	default:
		d, err := openDiskImages(s.root, q)
		if err != nil {
			s.disksWhy = "disk quota watched, not held: " + err.Error()
			return
		}
		s.disks = d
	}
}

// makeSandboxDir creates dir, the directory of a new sandbox, with a file
// system of its own when the server holds its quota.
func (s *Server) makeSandboxDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if s.disks == nil {
		return nil
	}
	return s.disks.attach(dir)
}

// removeSandboxDir removes the directory of a sandbox, and its file
// system if it has one.
func (s *Server) removeSandboxDir(dir string) error {
	if s.disks != nil {
		if err := s.disks.detach(dir, true); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
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

// closeDisks unmounts the file system of every sandbox left. The images
// stay, in the server's directory, which Close removes when it made it.
func (s *Server) closeDisks() {
	if s.disks == nil {
		return
	}
	s.mu.Lock()
	dirs := make([]string, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		dirs = append(dirs, sb.dir)
	}
	s.mu.Unlock()
	for _, d := range dirs {
		if err := s.disks.detach(d, false); err != nil {
			s.log.Warn("local: cannot unmount a sandbox's file system", "err", err)
		}
	}
	s.disks.close()
}

// uploadRoom returns how many decompressed bytes an upload into sb may
// add, or -1 when there is no quota.
func (s *Server) uploadRoom(sb *sandboxRec) (int64, error) {
	q := s.cfg.quota()
	if q == 0 {
		return -1, nil
	}
	if s.disks != nil {
		room, err := freeSpace(sb.dir)
		if err == nil && room == 0 {
			err = fmt.Errorf("%w: the sandbox's file system is full", errQuota)
		}
		return room, err
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
	if q == 0 || s.disks != nil || sess.diskWatched {
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
				r.note(msg)
				_ = r.proc.Signal(signalKill)
			}
		}
	}()
}

// runningCommand is a command that has started and not ended, and its
// process (which the command drops once it has ended): a command of the
// API (c set) or a terminal's (tty set).
type runningCommand struct {
	c    *commandRec
	tty  io.Writer
	proc Process
}

// note tells the command's reader msg: on its stderr, or its terminal.
func (r runningCommand) note(msg string) {
	if r.c != nil {
		_ = r.c.out.append(streamStderr, []byte(msg))
		return
	}
	_, _ = r.tty.Write([]byte(strings.ReplaceAll(msg, "\n", "\r\n")))
}

// liveCommands returns the running commands of sess, terminals included,
// and whether any command of it has not ended yet (started or about to
// start). When none is left it marks the session as no longer watched.
func (s *Server) liveCommands(sess *sessionRec) (running []runningCommand, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range sess.commands {
		if c.exitCode == nil {
			pending = true
			if c.proc != nil {
				running = append(running, runningCommand{c: c, proc: c.proc})
			}
		}
	}
	for t := range sess.terminals {
		pending = true
		running = append(running, *t)
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
			out = append(out, runningCommand{c: c, proc: c.proc})
		}
	}
	return out
}
