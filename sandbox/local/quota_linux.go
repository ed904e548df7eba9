package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The disk quota is held by a file system of the sandbox's own: an ext4
// image, sparse, on a loop device, mounted on the sandbox's directory.
// Why this and not the alternatives:
//
//   - The image's length bounds what the host can ever hold for the
//     sandbox, whatever its commands do and with whatever privileges:
//     fallocate, sparse files, a terminal's command, a command that runs
//     as root (CAP_SYS_RESOURCE passes quotas, not the end of a file
//     system: the image has no blocks reserved for root) all end with
//     ENOSPC at the same place, at once.
//   - Project quotas would cost less per sandbox but need a file system
//     made with them (the usual ext4 root is not), pass for
//     CAP_SYS_RESOURCE, and can be escaped by a root command that changes
//     a file's project.
//   - A size-limited tmpfs is free to create but keeps the files in
//     memory (and swap), so 8 GiB of quota would be 8 GiB of RAM.
//
// The images stay on the host's disk and are sparse: a sandbox takes on
// the host what it has written, and never more than the image. Snapshots
// are copies of the tree, made outside the image, so a full sandbox is
// snapshotted whole. Each image is a copy of one template per server (one
// mkfs.ext4 per server, not per sandbox); the loop device is set to clear
// itself when the file system is unmounted (or the server dies before it
// mounts it), and a lock file held while the server lives tells a later
// server which mounts a crashed one left, so that it unmounts them.

// diskImages makes, mounts and releases the sandboxes' file systems of a
// server.
type diskImages struct {
	dir      string   // <root>/disks: the images, the template and the lock
	size     int64    // bytes of each image
	template string   // an empty file system of size bytes
	lock     *os.File // locked while the server lives
}

// imageSize is the length of the image that holds quota q: q, and the
// margin that the file system's own records take (inode tables, bitmaps,
// the clusters ext4 keeps for itself), so that the files get about q.
func imageSize(q int64) int64 { return q + q/16 + 1<<20 }

// mkfsArgs make a file system without a journal (no kernel thread per
// sandbox, and nothing the host must hold beyond the files), without
// blocks reserved for root, with an inode per 32 KiB, and without zeroing
// its tables (the image is sparse: unwritten blocks read as zeros).
var mkfsArgs = []string{"-q", "-F", "-t", "ext4", "-O", "^has_journal,^resize_inode", "-m", "0", "-i", "32768", "-E", "lazy_itable_init=1,nodiscard"}

// mountOptions keep the kernel from initialising the inode tables in the
// background, which would write blocks of the image that no file needs.
const mountOptions = "noinit_itable"

// openDiskImages prepares to hold a quota of q bytes per sandbox of the
// server in root, or says why this system cannot.
func openDiskImages(root string, q int64) (*diskImages, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the server does not run as root, which mounting needs")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return nil, errors.New("no loop devices (/dev/loop-control)")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return nil, errors.New("mkfs.ext4 is not installed")
	}
	// Before this server locks its own directory: a crashed server on
	// the same directory left its lock unheld.
	releaseAbandoned()
	dir := filepath.Join(root, "disks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("another server uses %s", root)
	}
	d := &diskImages{dir: dir, size: imageSize(q), template: filepath.Join(dir, "template.img"), lock: lock}
	if err := d.makeTemplate(mkfs); err != nil {
		d.close()
		return nil, err
	}
	// Prove that this system mounts one, before any sandbox needs it.
	probe := filepath.Join(dir, "probe")
	if err := os.MkdirAll(probe, 0o700); err != nil {
		d.close()
		return nil, err
	}
	err = d.attach(probe)
	if err == nil {
		err = d.detach(probe, true)
	}
	_ = os.Remove(probe)
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// makeTemplate makes the empty file system that each image copies.
func (d *diskImages) makeTemplate(mkfs string) error {
	_ = os.Remove(d.template)
	f, err := os.OpenFile(d.template, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(d.size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	out, err := exec.Command(mkfs, append(mkfsArgs, d.template)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, bounded(string(out)))
	}
	return nil
}

// bounded returns s, cut to its first 200 bytes.
func bounded(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// image is the path of the image mounted on mountpoint.
func (d *diskImages) image(mountpoint string) string {
	return filepath.Join(d.dir, filepath.Base(mountpoint)+".img")
}

// attach gives mountpoint (an empty directory) a file system of its own.
func (d *diskImages) attach(mountpoint string) (err error) {
	img := d.image(mountpoint)
	if err := copyImage(img, d.template); err != nil {
		_ = os.Remove(img)
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(img)
		}
	}()
	backing, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer backing.Close()
	dev, err := loopDevice(backing)
	if err != nil {
		return fmt.Errorf("loop device: %w", err)
	}
	// The device clears itself on its last close once the file system
	// is unmounted; closing it here is that last close if mount fails.
	defer dev.Close()
	if err := unix.Mount(dev.Name(), mountpoint, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, mountOptions); err != nil {
		return fmt.Errorf("mount %s: %w", dev.Name(), err)
	}
	// e2fsck's directory is no part of a sandbox's tree.
	if err := os.Remove(filepath.Join(mountpoint, "lost+found")); err != nil {
		_ = d.detach(mountpoint, false)
		return err
	}
	return nil
}

// copyImage copies the template to img, holes kept.
func copyImage(img, template string) error {
	in, err := os.Open(template)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(img, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = copyData(out, in, info.Size())
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// loopDevice binds a free loop device to backing, set to clear itself
// on its last close, and returns it open.
func loopDevice(backing *os.File) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(backing.Fd())}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], backing.Name())
	for range 64 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, err
		}
		dev, err := os.OpenFile("/dev/loop"+strconv.Itoa(n), os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, err
		}
		// Another process took that device first: ask again.
	}
	return nil, errors.New("every free loop device was taken by another process first")
}

// detach unmounts the file system of mountpoint, and removes its image
// when drop is set. A file system that a process still uses (one that a
// command left, in a mount namespace of its own) is detached now and
// released by the kernel when that process ends.
func (d *diskImages) detach(mountpoint string, drop bool) error {
	var st unix.Stat_t
	statErr := unix.Stat(mountpoint, &st)
	err := unix.Unmount(mountpoint, 0)
	if err == nil && statErr == nil && unix.Major(st.Dev) == loopMajor {
		waitCleared(unix.Minor(st.Dev))
	}
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(mountpoint, unix.MNT_DETACH)
	}
	if errors.Is(err, unix.EINVAL) {
		err = nil // not mounted
	}
	if drop {
		if rerr := os.Remove(d.image(mountpoint)); err == nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
	}
	return err
}

// loopMajor is the major device number of loop devices.
const loopMajor = 7

// waitCleared waits, a few seconds at most, until the loop device of
// minor number minor is no longer bound to a file: the kernel clears a
// device set to clear itself after its last close, in the background.
func waitCleared(minor uint32) {
	bound := fmt.Sprintf("/sys/dev/block/%d:%d/loop/backing_file", loopMajor, minor)
	for range 5000 {
		if _, err := os.Stat(bound); errors.Is(err, fs.ErrNotExist) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// close releases the lock and the template; the images stay.
func (d *diskImages) close() {
	_ = os.Remove(d.template)
	_ = d.lock.Close()
}

// releaseAbandoned unmounts the sandboxes' file systems that a server
// which is gone (crashed) left mounted: those whose image lies in a disks
// directory whose lock nobody holds. The loop devices clear themselves.
func releaseAbandoned() {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		mountpoint, source, ok := loopMount(sc.Text())
		if !ok {
			continue
		}
		b, err := os.ReadFile("/sys/block/" + filepath.Base(source) + "/loop/backing_file")
		if err != nil {
			continue
		}
		img := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		dir := filepath.Dir(img)
		if filepath.Base(dir) != "disks" || filepath.Ext(img) != ".img" || !abandoned(filepath.Join(dir, "lock")) {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(source, "/dev/loop"), 10, 32)
		if err == nil && unix.Unmount(mountpoint, 0) == nil {
			waitCleared(uint32(n))
			continue
		}
		_ = unix.Unmount(mountpoint, unix.MNT_DETACH)
	}
}

// loopMount parses a line of /proc/self/mountinfo and returns the mount
// point and the device of an ext4 file system on a loop device.
func loopMount(line string) (mountpoint, source string, ok bool) {
	pre, post, found := strings.Cut(line, " - ")
	if !found {
		return "", "", false
	}
	f, g := strings.Fields(pre), strings.Fields(post)
	if len(f) < 5 || len(g) < 2 || g[0] != "ext4" || !strings.HasPrefix(g[1], "/dev/loop") {
		return "", "", false
	}
	return unescapeMount(f[4]), g[1], true
}

// unescapeMount undoes the octal escapes (\040 for a space) of a path in
// /proc/self/mountinfo.
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// abandoned reports whether nobody holds the lock file at path: its server
// is gone.
func abandoned(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return true
}

// freeSpace returns the bytes that the files of the file system holding
// dir may still take.
func freeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}
