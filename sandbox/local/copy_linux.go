package local

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Whence values of lseek that find data and holes in a sparse file.
const (
	seekData = 3
	seekHole = 4
)

// copyData copies the size bytes of in to out, region of data by region
// of data, so that holes stay holes, and returns the bytes it copied.
func copyData(out, in *os.File, size int64) (int64, error) {
	var copied int64
	for off := int64(0); off < size; {
		start, err := in.Seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole is left
		}
		if errors.Is(err, syscall.EINVAL) && off == 0 {
			return io.Copy(out, in) // no hole detection on this file system
		}
		if err != nil {
			return copied, err
		}
		end, err := in.Seek(start, seekHole)
		if err != nil {
			return copied, err
		}
		end = min(end, size)
		if _, err := in.Seek(start, io.SeekStart); err != nil {
			return copied, err
		}
		if _, err := out.Seek(start, io.SeekStart); err != nil {
			return copied, err
		}
		n, err := io.CopyN(out, in, end-start)
		copied += n
		if err != nil {
			return copied, err
		}
		off = end
	}
	return copied, out.Truncate(size)
}
