package sandbox

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// FileStat is what Stat, Lstat, ReadDir and Walk report beyond
// fs.FileInfo. The Sys method of their fs.FileInfo returns a *FileStat.
type FileStat struct {
	// Path is the path the entry was reached by, as the sandbox reported it.
	Path string
	// UID and GID are the numeric owner and group; User and Group their
	// names (the number again when the sandbox has no name for it).
	UID, GID    int
	User, Group string
	// Links is the number of hard links; Inode the inode number.
	Links, Inode uint64
	// AccessTime and ChangeTime complete ModTime.
	AccessTime, ChangeTime time.Time
	// LinkTarget is the content of a symbolic link, unresolved; empty for
	// anything else (and for Stat, which follows links).
	LinkTarget string
}

// fileInfo implements fs.FileInfo for a file of the sandbox.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	stat  FileStat
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *fileInfo) ModTime() time.Time { return fi.mtime }
func (fi *fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.stat }

// dirEntry implements fs.DirEntry. Everything is known from one listing,
// so Info never makes a request.
type dirEntry struct{ info *fileInfo }

func (d dirEntry) Name() string               { return d.info.name }
func (d dirEntry) IsDir() bool                { return d.info.IsDir() }
func (d dirEntry) Type() fs.FileMode          { return d.info.mode.Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.info, nil }
func (d dirEntry) String() string             { return fs.FormatDirEntry(d) }

// ListingError is a listing (Stat, Lstat, ReadDir, Walk and the DirFS
// view) in a form the sandbox's find never prints. Code in the sandbox can
// forge one: a name that is not one path element ("", ".", "..", or one
// holding "/") would lead a caller that joins it to the directory listed,
// as fs.WalkDir does, out of that directory. Such a listing is refused
// whole: nothing of it is returned.
type ListingError struct {
	Record int    // the record at fault, from 0 (the starting point)
	Reason string // what is wrong with it
}

// Error implements error.
func (e *ListingError) Error() string {
	return fmt.Sprintf("vercel sandbox: listing refused at record %d: %s", e.Record, e.Reason)
}

// findFormat is the -printf format of every listing: each field ends with
// a NUL, the one byte no file name or link target can hold, so names with
// spaces, newlines or any other byte parse. The fields are, in order: type
// (lstat), type following links (N: dangling, L: loop), permission bits
// in octal with setuid, setgid and sticky, size, uid, gid, user, group,
// links, inode, access, modification and change time in seconds with a
// fraction, link target, path below the starting point, base name.
const findFormat = `%y\0%Y\0%m\0%s\0%U\0%G\0%u\0%g\0%n\0%i\0%A@\0%T@\0%C@\0%l\0%P\0%f\0`

const findFields = 16

// findRecord is one parsed line of findFormat output.
type findRecord struct {
	info     *fileInfo
	rel      string // path below the starting point; empty for the starting point
	followed byte   // %Y: the type after following links
}

// parseFind splits find output made with findFormat, for the starting
// point base listed down to maxDepth (-1: no limit). It refuses, with a
// *ListingError, output that find never prints: the starting point first
// and once, then paths below it of at most maxDepth elements, none of
// them "", "." or "..", each once and after its directory, each named by
// its last element. The starting point is named by the last element of
// base, as os.Stat names a file, whatever the listing says.
func parseFind(out []byte, base string, maxDepth int) ([]findRecord, error) {
	fields := bytes.Split(out, []byte{0})
	if len(fields) > 0 && len(fields[len(fields)-1]) == 0 {
		fields = fields[:len(fields)-1]
	}
	if len(fields)%findFields != 0 {
		return nil, &ListingError{Record: len(fields) / findFields, Reason: fmt.Sprintf("%d fields, not a whole number of records", len(fields))}
	}
	recs := make([]findRecord, 0, len(fields)/findFields)
	// isDir holds every path listed, and whether it is a directory.
	isDir := make(map[string]bool, len(fields)/findFields)
	for i := 0; i < len(fields); i += findFields {
		n := len(recs)
		rec, err := parseRecord(fields[i:i+findFields], base)
		if err != nil {
			return nil, &ListingError{Record: n, Reason: fmt.Sprintf("a number does not parse: %.200s", err)}
		}
		if n == 0 {
			if rec.rel != "" {
				return nil, &ListingError{Record: 0, Reason: fmt.Sprintf("the first record, %.200q, is not the starting point", rec.rel)}
			}
			rec.info.name = path.Base(path.Clean(base))
		} else if reason := belowFault(rec, isDir, maxDepth); reason != "" {
			return nil, &ListingError{Record: n, Reason: reason}
		}
		isDir[rec.rel] = rec.info.IsDir()
		recs = append(recs, rec)
	}
	return recs, nil
}

// belowFault reports why rec cannot be an entry below the starting point
// of a listing down to maxDepth, given the paths listed before it, or ""
// when it can.
func belowFault(rec findRecord, isDir map[string]bool, maxDepth int) string {
	rel, name := rec.rel, rec.info.name
	elems := strings.Split(rel, "/")
	for _, e := range elems {
		if e == "" || e == "." || e == ".." {
			return fmt.Sprintf("path %.200q is not a path below the starting point", rel)
		}
	}
	switch dir := path.Dir(rel); {
	case maxDepth >= 0 && len(elems) > maxDepth:
		return fmt.Sprintf("path %.200q is deeper than the %d levels listed", rel, maxDepth)
	case name != elems[len(elems)-1]:
		return fmt.Sprintf("name %.200q is not the last element of its path %.200q", name, rel)
	case dir == ".":
	case !isDir[dir]:
		return fmt.Sprintf("path %.200q does not follow its directory", rel)
	}
	if _, dup := isDir[rel]; dup {
		return fmt.Sprintf("path %.200q is listed twice", rel)
	}
	return ""
}

func parseRecord(f [][]byte, base string) (findRecord, error) {
	var p numParser
	typ, followed := string(f[0]), string(f[1])
	perm := p.uint(f[2], 8)
	fi := &fileInfo{name: string(f[15]), size: int64(p.uint(f[3], 10))}
	fi.mode = fileMode(typ, perm)
	fi.stat = FileStat{
		UID: int(p.uint(f[4], 10)), GID: int(p.uint(f[5], 10)),
		User: string(f[6]), Group: string(f[7]),
		Links: p.uint(f[8], 10), Inode: p.uint(f[9], 10),
		AccessTime: p.time(f[10]), ChangeTime: p.time(f[12]),
		LinkTarget: string(f[13]),
	}
	fi.mtime = p.time(f[11])
	rel := string(f[14])
	fi.stat.Path = base
	if rel != "" {
		fi.stat.Path = strings.TrimSuffix(base, "/") + "/" + rel
	}
	if p.err != nil {
		return findRecord{}, p.err
	}
	var fol byte
	if followed != "" {
		fol = followed[0]
	}
	return findRecord{info: fi, rel: rel, followed: fol}, nil
}

// fileMode builds an fs.FileMode from find's type letter and octal bits.
func fileMode(typ string, bits uint64) fs.FileMode {
	m := fs.FileMode(bits & 0o777)
	if bits&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if bits&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if bits&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	switch typ {
	case "d":
		m |= fs.ModeDir
	case "l":
		m |= fs.ModeSymlink
	case "p":
		m |= fs.ModeNamedPipe
	case "s":
		m |= fs.ModeSocket
	case "c":
		m |= fs.ModeDevice | fs.ModeCharDevice
	case "b":
		m |= fs.ModeDevice
	case "f":
	default:
		m |= fs.ModeIrregular
	}
	return m
}

// numParser keeps the first parse error so a record is checked once.
type numParser struct{ err error }

func (p *numParser) uint(b []byte, base int) uint64 {
	n, err := strconv.ParseUint(string(b), base, 64)
	if err != nil && p.err == nil {
		p.err = err
	}
	return n
}

// time parses find's "seconds.fraction" form.
func (p *numParser) time(b []byte) time.Time {
	sec, frac, _ := strings.Cut(string(b), ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		if p.err == nil {
			p.err = err
		}
		return time.Time{}
	}
	frac = (frac + "000000000")[:9]
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil && p.err == nil {
		p.err = err
	}
	return time.Unix(s, ns)
}
