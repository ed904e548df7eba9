package sandboxtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// The file tools (see Script) play the commands of the file calls of
// package sandbox on the sandbox's directory, through an os.Root so that
// nothing outside it is reached.

// fileTool returns the handler that plays cmd as a file tool, or nil.
func fileTool(cmd *local.Cmd) Handler {
	var run func(t *toolRun) error
	a := cmd.Args
	switch cmd.Name {
	case "find":
		f, ok := parseFind(a)
		if !ok {
			return nil
		}
		run = f.run
	case "mktemp":
		// mktemp -d -p DIR --suffix=SUFFIX -- TEMPLATE
		if len(a) != 6 || a[0] != "-d" || a[1] != "-p" || !strings.HasPrefix(a[3], "--suffix=") || a[4] != "--" {
			return nil
		}
		dir, suffix, tmpl := a[2], strings.TrimPrefix(a[3], "--suffix="), a[5]
		run = func(t *toolRun) error { return t.mktemp(dir, tmpl, suffix) }
	case "rm":
		// rm -d -- PATH, rm -rf -- PATH
		if len(a) != 3 || (a[0] != "-d" && a[0] != "-rf") || a[1] != "--" {
			return nil
		}
		all, p := a[0] == "-rf", a[2]
		run = func(t *toolRun) error { return t.rm(p, all) }
	case "mv":
		// mv -f -T -- OLD NEW
		if len(a) != 5 || a[0] != "-f" || a[1] != "-T" || a[2] != "--" {
			return nil
		}
		run = func(t *toolRun) error { return t.mv(a[3], a[4]) }
	case "chmod":
		// chmod MODE -- PATH
		mode, err := strconv.ParseUint(first(a), 8, 32)
		if len(a) != 3 || err != nil || mode > 0o7777 || a[1] != "--" {
			return nil
		}
		run = func(t *toolRun) error { return t.chmod(a[2], uint32(mode)) }
	case "chown":
		// chown [UID][:GID] -- PATH
		uid, gid, ok := parseOwner(first(a))
		if len(a) != 3 || !ok || a[1] != "--" {
			return nil
		}
		run = func(t *toolRun) error { return t.chown(a[2], uid, gid) }
	case "ln":
		// ln -s -- TARGET NAME
		if len(a) != 4 || a[0] != "-s" || a[1] != "--" {
			return nil
		}
		run = func(t *toolRun) error { return t.symlink(a[2], a[3]) }
	default:
		return nil
	}
	return HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		t := &toolRun{cmd: cmd}
		err := t.open()
		if err == nil {
			defer t.root.Close()
			err = run(t)
		}
		if err != nil {
			fmt.Fprintf(cmd.Stderr, "%s: %v\n", cmd.Name, err)
			return 1
		}
		return 0
	})
}

func first(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return a[0]
}

// parseOwner parses chown's UID, :GID or UID:GID, numbers only; -1 is
// "unchanged".
func parseOwner(s string) (uid, gid int, ok bool) {
	u, g, colon := strings.Cut(s, ":")
	num := func(s string) (int, bool) {
		if s == "" {
			return -1, true
		}
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0
	}
	uid, okU := num(u)
	gid, okG := num(g)
	return uid, gid, okU && okG && (u != "" || colon && g != "")
}

// toolRun is one file tool at work on one sandbox.
type toolRun struct {
	cmd  *local.Cmd
	root *os.Root
	host bool // host-path mode: sandbox paths are host paths in cmd.Dir
}

func (t *toolRun) open() error {
	if t.cmd.Dir == "" {
		return errors.New("no sandbox directory (local.Cmd.Dir) to act on")
	}
	root, err := os.OpenRoot(t.cmd.Dir)
	if err != nil {
		return err
	}
	t.root = root
	t.host = t.cmd.Cwd == t.cmd.HostCwd
	return nil
}

// rel maps the sandbox path p to a path in the root, for os.Root.
func (t *toolRun) rel(p string) (string, error) {
	if t.host {
		if !filepath.IsAbs(p) {
			p = filepath.Join(t.cmd.Cwd, p)
		}
		rel, err := filepath.Rel(t.cmd.Dir, filepath.Clean(p))
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			return "", syscall.EACCES
		}
		return rel, nil
	}
	if !path.IsAbs(p) {
		p = path.Join(t.cmd.Cwd, p)
	}
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		return ".", nil
	}
	return filepath.FromSlash(rel), nil
}

// toolErr is a failure worded as coreutils word it: what, 'p': reason.
func toolErr(what, p string, err error) error {
	return fmt.Errorf("%s '%s': %s", what, p, strerror(err))
}

// strerror is the C library's message for err: "No such file or
// directory", as the tools print it.
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		if s == "" {
			return s
		}
		r := []rune(s)
		r[0] = unicode.ToUpper(r[0])
		return string(r)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func (t *toolRun) mktemp(dir, tmpl, suffix string) error {
	x := len(tmpl) - len(strings.TrimRight(tmpl, "X"))
	if x < 3 {
		return fmt.Errorf("too few X's in template '%s'", tmpl)
	}
	rdir, err := t.rel(dir)
	if err != nil {
		return toolErr("failed to create directory via template", dir+"/"+tmpl+suffix, err)
	}
	for range 100 {
		random := rand.Text()
		for len(random) < x {
			random += rand.Text()
		}
		name := tmpl[:len(tmpl)-x] + random[:x] + suffix
		err = t.root.Mkdir(filepath.Join(rdir, name), 0o700)
		if errors.Is(err, fs.ErrExist) {
			if _, serr := t.root.Lstat(filepath.Join(rdir, name)); serr == nil {
				continue // taken: draw again
			}
		}
		if err != nil {
			return toolErr("failed to create directory via template", strings.TrimSuffix(dir, "/")+"/"+tmpl+suffix, err)
		}
		_, err = io.WriteString(t.cmd.Stdout, strings.TrimSuffix(dir, "/")+"/"+name+"\n")
		return err
	}
	return toolErr("failed to create directory via template", dir+"/"+tmpl+suffix, syscall.EEXIST)
}

func (t *toolRun) rm(p string, all bool) error {
	if b := path.Base(p); b == "." || b == ".." {
		return fmt.Errorf("refusing to remove '.' or '..' directory: skipping '%s'", p)
	}
	rel, err := t.rel(p)
	if err != nil {
		return toolErr("cannot remove", p, err)
	}
	if rel == "." {
		return fmt.Errorf("it is dangerous to operate recursively on '%s'", p)
	}
	if all {
		err = t.root.RemoveAll(rel)
	} else {
		err = t.root.Remove(rel)
		if errors.Is(err, syscall.EEXIST) {
			err = syscall.ENOTEMPTY // as Linux reports it
		}
	}
	if err != nil {
		return toolErr("cannot remove", p, err)
	}
	return nil
}

func (t *toolRun) mv(oldp, newp string) error {
	oldRel, err := t.rel(oldp)
	if err != nil {
		return toolErr("cannot stat", oldp, err)
	}
	if _, err := t.root.Lstat(oldRel); err != nil {
		return toolErr("cannot stat", oldp, err)
	}
	newRel, err := t.rel(newp)
	if err == nil {
		err = t.root.Rename(oldRel, newRel)
	}
	if err != nil {
		return fmt.Errorf("cannot move '%s' to '%s': %s", oldp, newp, strerror(err))
	}
	return nil
}

func (t *toolRun) chmod(p string, bits uint32) error {
	rel, err := t.rel(p)
	if err == nil {
		_, err = t.root.Stat(rel)
	}
	if err != nil {
		return toolErr("cannot access", p, err)
	}
	mode := fs.FileMode(bits & 0o777)
	for _, b := range []struct {
		bit  uint32
		mode fs.FileMode
	}{{0o4000, fs.ModeSetuid}, {0o2000, fs.ModeSetgid}, {0o1000, fs.ModeSticky}} {
		if bits&b.bit != 0 {
			mode |= b.mode
		}
	}
	if err := t.root.Chmod(rel, mode); err != nil {
		return toolErr("changing permissions of", p, err)
	}
	return nil
}

func (t *toolRun) chown(p string, uid, gid int) error {
	rel, err := t.rel(p)
	if err == nil {
		_, err = t.root.Stat(rel)
	}
	if err != nil {
		return toolErr("cannot access", p, err)
	}
	if err := t.root.Chown(rel, uid, gid); err != nil {
		return toolErr("changing ownership of", p, err)
	}
	return nil
}

func (t *toolRun) symlink(target, name string) error {
	rel, err := t.rel(name)
	if err != nil {
		return toolErr("failed to create symbolic link", name, err)
	}
	// As ln does, a link made where a directory is goes inside it.
	if fi, err := t.root.Stat(rel); err == nil && fi.IsDir() {
		name = strings.TrimSuffix(name, "/") + "/" + path.Base(target)
		rel = filepath.Join(rel, path.Base(target))
	}
	if err := t.root.Symlink(target, rel); err != nil {
		return toolErr("failed to create symbolic link", name, err)
	}
	return nil
}

// findCmd is find FOLLOW START [-maxdepth N] -printf FORMAT.
type findCmd struct {
	follow   string // -P, -H or -L
	start    string
	maxDepth int // -1: no limit
	format   string
}

func parseFind(a []string) (findCmd, bool) {
	f := findCmd{maxDepth: -1}
	if len(a) != 4 && len(a) != 6 {
		return f, false
	}
	if a[0] != "-P" && a[0] != "-H" && a[0] != "-L" || a[1] == "" || strings.HasPrefix(a[1], "-") {
		return f, false
	}
	f.follow, f.start = a[0], a[1]
	rest := a[2:]
	if len(rest) == 4 {
		n, err := strconv.Atoi(rest[1])
		if rest[0] != "-maxdepth" || err != nil || n < 0 {
			return f, false
		}
		f.maxDepth, rest = n, rest[2:]
	}
	if rest[0] != "-printf" {
		return f, false
	}
	f.format = rest[1]
	return f, true
}

// findEntry is a file find reports.
type findEntry struct {
	rel    string      // in the root
	shown  string      // %p: the path as find names it
	below  string      // %P: the path below the starting point
	lstat  fs.FileInfo // the file itself
	info   fs.FileInfo // followed, as the FOLLOW option says
	target string      // %l
	typeY  byte        // %Y
}

func (f findCmd) run(t *toolRun) error {
	out := bufio.NewWriter(t.cmd.Stdout)
	rel, err := t.rel(f.start)
	var start findEntry
	if err == nil {
		start, err = t.entry(rel, f.start, "", f.follow != "-P")
	}
	if err != nil {
		return fmt.Errorf("'%s': %s", f.start, strerror(err))
	}
	var walkErr error
	var visit func(e findEntry, depth int) error
	visit = func(e findEntry, depth int) error {
		if err := f.print(out, t, e); err != nil {
			return err
		}
		if !e.info.IsDir() || f.maxDepth >= 0 && depth >= f.maxDepth {
			return nil
		}
		if depth > 0 && f.follow == "-L" && e.lstat.Mode()&fs.ModeSymlink != 0 {
			return nil // a followed link is listed, not entered: no loops
		}
		dir, err := t.root.Open(e.rel)
		if err == nil {
			var names []string
			names, err = dir.Readdirnames(-1)
			dir.Close()
			slices.Sort(names)
			for _, name := range names {
				below := name
				if e.below != "" {
					below = e.below + "/" + name
				}
				child, cerr := t.entry(filepath.Join(e.rel, name), strings.TrimSuffix(e.shown, "/")+"/"+name, below, f.follow == "-L")
				if cerr != nil {
					walkErr = fmt.Errorf("'%s': %s", strings.TrimSuffix(e.shown, "/")+"/"+name, strerror(cerr))
					continue
				}
				if err := visit(child, depth+1); err != nil {
					return err
				}
			}
		}
		if err != nil {
			walkErr = fmt.Errorf("'%s': %s", e.shown, strerror(err))
		}
		return nil
	}
	if err := visit(start, 0); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	return walkErr
}

// entry describes the file at rel. follow reports it as what its link
// leads to; a link that leads nowhere is reported as itself.
func (t *toolRun) entry(rel, shown, below string, follow bool) (findEntry, error) {
	e := findEntry{rel: rel, shown: shown, below: below}
	var err error
	e.lstat, err = t.root.Lstat(rel)
	if err != nil {
		return e, err
	}
	e.info, e.typeY = e.lstat, typeLetter(e.lstat.Mode())
	if e.lstat.Mode()&fs.ModeSymlink != 0 {
		e.target, _ = t.root.Readlink(rel)
		fi, serr := t.root.Stat(rel)
		switch {
		case serr == nil:
			e.typeY = typeLetter(fi.Mode())
			if follow {
				e.info = fi
			}
		case errors.Is(serr, syscall.ELOOP):
			e.typeY = 'L'
		default:
			e.typeY = 'N'
		}
	}
	return e, nil
}

func typeLetter(m fs.FileMode) byte {
	switch m.Type() {
	case fs.ModeDir:
		return 'd'
	case fs.ModeSymlink:
		return 'l'
	case fs.ModeNamedPipe:
		return 'p'
	case fs.ModeSocket:
		return 's'
	case fs.ModeDevice | fs.ModeCharDevice:
		return 'c'
	case fs.ModeDevice:
		return 'b'
	case 0:
		return 'f'
	}
	return 'U'
}

// print writes e in f.format, as find -printf does.
func (f findCmd) print(w *bufio.Writer, t *toolRun, e findEntry) error {
	st := statOf(e.info)
	s := f.format
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case '0':
				w.WriteByte(0)
			case 'n':
				w.WriteByte('\n')
			case 't':
				w.WriteByte('\t')
			case '\\':
				w.WriteByte('\\')
			default:
				return fmt.Errorf("warning: unrecognized escape '\\%c'", s[i])
			}
		case c == '%' && i+1 < len(s):
			i++
			switch d := s[i]; d {
			case '%':
				w.WriteByte('%')
			case 'y':
				w.WriteByte(typeLetter(e.info.Mode()))
			case 'Y':
				w.WriteByte(e.typeY)
			case 'm':
				w.WriteString(strconv.FormatUint(uint64(permBits(e.info.Mode())), 8))
			case 's':
				w.WriteString(strconv.FormatInt(e.info.Size(), 10))
			case 'U':
				w.WriteString(strconv.FormatUint(uint64(st.uid), 10))
			case 'G':
				w.WriteString(strconv.FormatUint(uint64(st.gid), 10))
			case 'u':
				w.WriteString(t.name("passwd", st.uid))
			case 'g':
				w.WriteString(t.name("group", st.gid))
			case 'n':
				w.WriteString(strconv.FormatUint(st.nlink, 10))
			case 'i':
				w.WriteString(strconv.FormatUint(st.ino, 10))
			case 'l':
				if e.info.Mode()&fs.ModeSymlink != 0 {
					w.WriteString(e.target)
				}
			case 'P':
				w.WriteString(e.below)
			case 'p':
				w.WriteString(e.shown)
			case 'f':
				w.WriteString(path.Base(e.shown))
			case 'A', 'T', 'C':
				if i+1 >= len(s) || s[i+1] != '@' {
					return fmt.Errorf("warning: unrecognized format directive '%%%c'", d)
				}
				i++
				tm := map[byte]time.Time{'A': st.atime, 'T': e.info.ModTime(), 'C': st.ctime}[d]
				fmt.Fprintf(w, "%d.%09d0", tm.Unix(), tm.Nanosecond())
			default:
				return fmt.Errorf("warning: unrecognized format directive '%%%c'", d)
			}
		default:
			w.WriteByte(c)
		}
	}
	return nil
}

// permBits are the permission, setuid, setgid and sticky bits of m.
func permBits(m fs.FileMode) uint32 {
	bits := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return bits
}

// name is the name of id in the sandbox's account file db (passwd or
// group, in cmd.EtcDir), or the number when it has none.
func (t *toolRun) name(db string, id uint32) string {
	num := strconv.FormatUint(uint64(id), 10)
	if t.cmd.EtcDir == "" {
		return num
	}
	data, err := os.ReadFile(filepath.Join(t.cmd.EtcDir, db))
	if err != nil {
		return num
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Split(strings.TrimRight(line, "\n"), ":")
		if len(f) > 2 && f[2] == num {
			return f[0]
		}
	}
	return num
}
