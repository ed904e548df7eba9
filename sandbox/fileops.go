package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// The file calls run the sandbox's own tools (find, mv, rm, ...), as the
// official SDKs do, since the API has no endpoint for them. Every path is
// one argument of its own, after "--" where the tool takes it, so no shell
// ever reads it. find takes no "--": a relative path is given as "./path",
// which find cannot mistake for an option or an expression. Failures are
// recognised from the tool's message (GNU coreutils and findutils, as on
// the sandbox image) and become *fs.PathError values whose Err matches
// the syscall.Errno, and so fs.ErrNotExist, fs.ErrExist or fs.ErrPermission.

// fileOps runs the file calls for a sandbox (as its default user) or for
// a User (through sudo -u).
type fileOps struct {
	run func(ctx context.Context, cmd *command.Cmd) (*command.Result, error)
}

// maxToolOutput bounds what a file command may print (a listing of some
// 400,000 entries): a sandbox cannot make the client hold more.
const maxToolOutput = 64 << 20

// exec runs name with args and returns its stdout. A failure is a
// *fs.PathError for op and p.
func (o fileOps) exec(ctx context.Context, op, p, name string, args ...string) ([]byte, error) {
	res, err := o.run(ctx, &command.Cmd{Name: name, Args: args, CaptureLimit: maxToolOutput})
	var exit *command.ExitError
	if errors.As(err, &exit) {
		res = exit.Result
	}
	if res != nil && (res.StdoutTruncated || res.StderrTruncated) {
		return nil, &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("%s printed more than %d bytes", name, maxToolOutput)}
	}
	if err != nil {
		var stderr string
		if res != nil {
			stderr = string(res.Stderr)
		}
		return nil, &fs.PathError{Op: op, Path: p, Err: toolError(err, stderr)}
	}
	return res.Stdout, nil
}

// toolFailure is a file command that failed in the sandbox: errno is the
// one its message names (nil when it names none), exit the command's
// *command.ExitError.
type toolFailure struct {
	errno   error
	message string
	exit    error
}

func (e *toolFailure) Error() string {
	if e.message != "" {
		return e.message
	}
	if e.errno != nil {
		return e.errno.Error()
	}
	return e.exit.Error()
}

func (e *toolFailure) Unwrap() []error {
	if e.errno == nil {
		return []error{e.exit}
	}
	return []error{e.errno, e.exit}
}

// toolMessages maps the messages of coreutils and findutils to errnos, in
// the order they are tried.
var toolMessages = []struct {
	text  string
	errno syscall.Errno
}{
	{"No such file or directory", syscall.ENOENT},
	{"Permission denied", syscall.EACCES},
	{"Operation not permitted", syscall.EPERM},
	{"File exists", syscall.EEXIST},
	{"Directory not empty", syscall.ENOTEMPTY},
	{"Not a directory", syscall.ENOTDIR},
	{"Is a directory", syscall.EISDIR},
	{"Too many levels of symbolic links", syscall.ELOOP},
	{"Invalid argument", syscall.EINVAL},
	{"Read-only file system", syscall.EROFS},
	{"No space left on device", syscall.ENOSPC},
}

// toolError classifies the failure of a file command. Errors other than
// an exit (transport, API) are returned as they are.
func toolError(err error, stderr string) error {
	var exit *command.ExitError
	if !errors.As(err, &exit) {
		return err
	}
	f := &toolFailure{exit: err, message: lastLine(stderr)}
	for _, m := range toolMessages {
		if strings.Contains(stderr, m.text) {
			f.errno = m.errno
			break
		}
	}
	return f
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// checkPath refuses, as an *InputError for field, a path that no call can
// send as given: empty, or a text JSON cannot carry (wire.TextFault).
func checkPath(field, p string) error {
	if p == "" {
		return apierr.Invalid(field, "empty")
	}
	if r := wire.TextFault(p); r != "" {
		return apierr.Invalid(field, "%s", r)
	}
	return nil
}

// findArg makes p safe as a starting point of find.
func findArg(p string) string {
	p = path.Clean(p)
	if !strings.HasPrefix(p, "/") {
		p = "./" + p
	}
	return p
}

// find lists p (and below it down to maxDepth; -1: no limit) with
// findFormat. follow is -L (links everywhere) or -H (the starting point).
func (o fileOps) find(ctx context.Context, op, p, follow string, maxDepth int) ([]findRecord, error) {
	if err := checkPath("name", p); err != nil {
		return nil, err
	}
	args := []string{follow, findArg(p)}
	if maxDepth >= 0 {
		args = append(args, "-maxdepth", strconv.Itoa(maxDepth))
	}
	out, err := o.exec(ctx, op, p, "find", append(args, "-printf", findFormat)...)
	if err != nil {
		return nil, err
	}
	recs, perr := parseFind(out, p, maxDepth)
	if perr != nil {
		return nil, &fs.PathError{Op: op, Path: p, Err: perr}
	}
	if len(recs) == 0 {
		return nil, &fs.PathError{Op: op, Path: p, Err: &ListingError{Reason: "find did not report the starting point"}}
	}
	return recs, nil
}

func (o fileOps) stat(ctx context.Context, op, p string, follow bool) (fs.FileInfo, error) {
	flag := "-P"
	if follow {
		flag = "-L"
	}
	recs, err := o.find(ctx, op, p, flag, 0)
	if err != nil {
		return nil, err
	}
	switch recs[0].followed {
	case 'N':
		if follow {
			return nil, &fs.PathError{Op: op, Path: p, Err: syscall.ENOENT}
		}
	case 'L':
		if follow {
			return nil, &fs.PathError{Op: op, Path: p, Err: syscall.ELOOP}
		}
	}
	return recs[0].info, nil
}

func (o fileOps) readDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	recs, err := o.find(ctx, "readdir", p, "-H", 1)
	if err != nil {
		return nil, err
	}
	if !recs[0].info.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: p, Err: syscall.ENOTDIR}
	}
	out := make([]fs.DirEntry, 0, len(recs)-1)
	for _, r := range recs[1:] {
		out = append(out, dirEntry{r.info})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// WalkEntry is one file or directory found by Walk.
type WalkEntry struct {
	// Path is the entry's path: the root given to Walk joined with the
	// path below it.
	Path string
	fs.DirEntry
}

func (o fileOps) walk(ctx context.Context, root string) iter.Seq2[WalkEntry, error] {
	return func(yield func(WalkEntry, error) bool) {
		if err := checkPath("root", root); err != nil {
			yield(WalkEntry{}, err)
			return
		}
		recs, err := o.find(ctx, "walk", root, "-H", -1)
		if err == nil && len(recs) > 0 && !recs[0].info.IsDir() {
			err = &fs.PathError{Op: "walk", Path: root, Err: syscall.ENOTDIR}
			recs = nil
		}
		for _, r := range recs {
			if r.rel == "" {
				continue
			}
			if !yield(WalkEntry{Path: r.info.stat.Path, DirEntry: dirEntry{r.info}}, nil) {
				return
			}
		}
		if err != nil {
			yield(WalkEntry{}, err)
		}
	}
}

// simple runs a tool whose only output is its exit status.
func (o fileOps) simple(ctx context.Context, op, p, name string, args ...string) error {
	if err := checkPath("name", p); err != nil {
		return err
	}
	_, err := o.exec(ctx, op, p, name, args...)
	return err
}

// pathOutput runs a -z tool and returns its one NUL-terminated answer.
func (o fileOps) pathOutput(ctx context.Context, op, p, name string, args ...string) (string, error) {
	if err := checkPath("name", p); err != nil {
		return "", err
	}
	out, err := o.exec(ctx, op, p, name, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(out), "\x00"), nil
}

func (o fileOps) readlink(ctx context.Context, p string) (string, error) {
	// readlink(1) fails without a word on a missing file and on a file
	// that is not a link alike; find tells them apart.
	fi, err := o.stat(ctx, "readlink", p, false)
	if err != nil {
		return "", err
	}
	if fi.Mode().Type() != fs.ModeSymlink {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: syscall.EINVAL}
	}
	return fi.Sys().(*FileStat).LinkTarget, nil
}

func (o fileOps) chmod(ctx context.Context, p string, mode fs.FileMode) error {
	bits, err := modeBits("mode", mode)
	if err != nil {
		return err
	}
	return o.simple(ctx, "chmod", p, "chmod", fmt.Sprintf("%04o", bits), "--", p)
}

// modeBits returns mode as the octal bits chmod takes, refusing, as an
// *InputError for field, any bit but permission, setuid, setgid and
// sticky.
func modeBits(field string, mode fs.FileMode) (uint32, error) {
	if mode&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		return 0, apierr.Invalid(field, "only permission, setuid, setgid and sticky bits can be set, got %v", mode)
	}
	bits := uint32(mode.Perm())
	for _, b := range []struct {
		m fs.FileMode
		v uint32
	}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}} {
		if mode&b.m != 0 {
			bits |= b.v
		}
	}
	return bits, nil
}

func (o fileOps) chown(ctx context.Context, p string, uid, gid int) error {
	if uid < -1 || gid < -1 {
		return apierr.Invalid("uid", "uid and gid must be -1 (unchanged) or at least 0, got %d and %d", uid, gid)
	}
	owner := ""
	if uid >= 0 {
		owner = strconv.Itoa(uid)
	}
	if gid >= 0 {
		owner += ":" + strconv.Itoa(gid)
	}
	if owner == "" {
		return checkPath("name", p)
	}
	return o.simple(ctx, "chown", p, "chown", owner, "--", p)
}

func (o fileOps) mkdirTemp(ctx context.Context, dir, pattern string) (string, error) {
	if dir == "" {
		dir = "/tmp"
	}
	if err := checkPath("dir", dir); err != nil {
		return "", err
	}
	if strings.Contains(pattern, "/") {
		return "", apierr.Invalid("pattern", "contains a path separator")
	}
	if r := wire.TextFault(pattern); r != "" {
		return "", apierr.Invalid("pattern", "%s", r)
	}
	prefix, suffix := pattern, ""
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	out, err := o.pathOutput(ctx, "mkdirtemp", dir, "mktemp", "-d", "-p", dir, "--suffix="+suffix, "--", prefix+"XXXXXXXXXX")
	return strings.TrimSuffix(out, "\n"), err
}

func (o fileOps) remove(ctx context.Context, p string) error {
	return o.simple(ctx, "remove", p, "rm", "-d", "--", p)
}

func (o fileOps) removeAll(ctx context.Context, p string) error {
	return o.simple(ctx, "removeall", p, "rm", "-rf", "--", p)
}

func (o fileOps) rename(ctx context.Context, oldpath, newpath string) error {
	if err := checkPath("newpath", newpath); err != nil {
		return err
	}
	return o.simple(ctx, "rename", oldpath, "mv", "-f", "-T", "--", oldpath, newpath)
}

func (o fileOps) symlink(ctx context.Context, oldname, newname string) error {
	if err := checkPath("oldname", oldname); err != nil {
		return err
	}
	return o.simple(ctx, "symlink", newname, "ln", "-s", "--", oldname, newname)
}
