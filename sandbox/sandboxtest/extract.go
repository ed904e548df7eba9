package sandboxtest

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// extractTarGz extracts a gzip-compressed tar archive into root. target maps
// each entry name to a path relative to root, refusing names that escape;
// root itself refuses symbolic links that lead outside it. Directories and
// regular files are supported; parents are created as needed and header
// modes applied.
func extractTarGz(ctx context.Context, r io.Reader, root *os.Root, target func(name string) (string, error)) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		}
		rel, err := target(hdr.Name)
		if err != nil {
			return err
		}
		perm := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if rel == "." {
				continue
			}
			if err := root.MkdirAll(rel, 0o755); err != nil {
				return err
			}
			if err := root.Chmod(rel, perm|0o700); err != nil {
				return err
			}
		case tar.TypeReg: // the reader reports old TypeRegA entries as TypeReg
			if rel == "." {
				return fmt.Errorf("entry %q is not a file path", hdr.Name)
			}
			if dir := filepath.Dir(rel); dir != "." {
				if err := root.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			}
			f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := root.Chmod(rel, perm); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q has an unsupported type %q", hdr.Name, hdr.Typeflag)
		}
	}
}
