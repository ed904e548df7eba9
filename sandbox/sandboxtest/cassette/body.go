package cassette

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxJSONBody is the largest request body read whole to be recorded as
// JSON; larger ones are summarised like binary bodies.
const maxJSONBody = 8 << 20

// maxStoredBody is the largest response body (other than a stream) kept in
// a cassette; a larger one is recorded by size and hash and cannot be
// replayed.
const maxStoredBody = 32 << 20

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(ct))
	}
	return mt
}

func isJSONType(ct string) bool {
	mt := mediaType(ct)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func isNDJSONType(ct string) bool { return mediaType(ct) == "application/x-ndjson" }

// archiveKind says whether a request body of this content type is a tar
// archive, and whether it is gzip-compressed.
func archiveKind(ct string) (isTar, gz bool) {
	switch mediaType(ct) {
	case "application/gzip", "application/x-gzip", "application/x-tar+gzip", "application/x-gtar":
		return true, true
	case "application/x-tar", "application/tar":
		return true, false
	}
	return false, false
}

// summarize reads a non-JSON request body to its end and describes it:
// for an archive its entry list (name, mode, size, sha256), otherwise its
// size and sha256, plus the bytes themselves when store is set. It reads in
// bounded memory unless store is set. A read error marks the summary
// truncated.
func summarize(r io.Reader, ct string, store bool) *bodyRec {
	h := sha256.New()
	var size int64
	var kept bytes.Buffer
	counted := io.TeeReader(r, writerFunc(func(p []byte) (int, error) {
		size += int64(len(p))
		h.Write(p)
		if store {
			kept.Write(p)
		}
		return len(p), nil
	}))
	bd := &bodyRec{}
	isTar, gz := archiveKind(ct)
	var readErr error
	if isTar {
		entries, err := listTar(counted, gz)
		if err == nil {
			bd.Tar, bd.Gzip = entries, gz
			if bd.Tar == nil {
				bd.Tar = []tarEntry{}
			}
		} else {
			isTar = false
			readErr = err
		}
	}
	if _, err := io.Copy(io.Discard, counted); err != nil {
		bd.Truncated = true
	}
	if !isTar {
		if readErr != nil && !isFormatError(readErr) {
			bd.Truncated = true
		}
		sum := hex.EncodeToString(h.Sum(nil))
		bd.Size, bd.SHA256 = &size, sum
	}
	if store {
		bd.Base64 = kept.Bytes()
		if bd.Base64 == nil {
			bd.Base64 = []byte{}
		}
	}
	return bd
}

// formatError marks an archive that could not be parsed (as opposed to a
// body that could not be read).
type formatError struct{ err error }

func (e formatError) Error() string { return e.err.Error() }

func isFormatError(err error) bool {
	var fe formatError
	return errors.As(err, &fe)
}

func listTar(r io.Reader, gz bool) ([]tarEntry, error) {
	src := r
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			if errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.EOF) {
				return nil, formatError{err}
			}
			return nil, err
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	var out []tarEntry
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if errors.Is(err, tar.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, formatError{err}
			}
			return nil, err
		}
		e := tarEntry{Name: hd.Name, Mode: "0" + strconv.FormatInt(hd.Mode&0o7777, 8), Size: hd.Size}
		switch hd.Typeflag {
		case tar.TypeReg:
			h := sha256.New()
			n, err := io.Copy(h, tr)
			if err != nil {
				return nil, err
			}
			e.Size, e.SHA256 = n, hex.EncodeToString(h.Sum(nil))
		case tar.TypeDir:
			e.Type = "dir"
		case tar.TypeSymlink:
			e.Type, e.Link = "symlink", hd.Linkname
		default:
			e.Type = string(rune(hd.Typeflag))
		}
		out = append(out, e)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// storeBody stores b as text when it is valid UTF-8 and the content type
// is not a binary one, as bytes otherwise.
func storeBody(n *normalizer, b []byte, ct string) *bodyRec {
	mt := mediaType(ct)
	binary := mt == "application/octet-stream" || !utf8.Valid(b) || (mt != "" && !strings.HasPrefix(mt, "text/") && !strings.Contains(mt, "json") && !strings.Contains(mt, "xml"))
	if binary {
		return &bodyRec{Base64: n.redactBytes(b)}
	}
	s := n.str(string(b))
	return &bodyRec{Text: &s}
}

// jsonBody normalises a JSON body; ok is false when b is not JSON.
func jsonBody(n *normalizer, b []byte) (*bodyRec, bool) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, false
	}
	return &bodyRec{JSON: canonical(n.json(v, ""))}, true
}

// nilIfEmpty drops the summary of an empty body, so that an empty body and
// no body match.
func nilIfEmpty(bd *bodyRec) *bodyRec {
	if bd.Tar == nil && !bd.Truncated && bd.Size != nil && *bd.Size == 0 {
		return nil
	}
	return bd
}
