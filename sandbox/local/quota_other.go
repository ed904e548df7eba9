//go:build !linux

package local

import "errors"

// diskImages would hold the sandboxes' file systems; see quota_linux.go.
// Elsewhere than on Linux the disk quota is watched.
type diskImages struct{}

// imageSize is what the host may hold for a quota of q: see quota_linux.go.
func imageSize(q int64) int64 { return q + q/16 + 1<<20 }

func openDiskImages(string, int64) (*diskImages, error) {
	return nil, errors.New("file systems of their own need Linux's loop devices")
}

func (d *diskImages) attach(string) error       { return errors.ErrUnsupported }
func (d *diskImages) detach(string, bool) error { return nil }
func (d *diskImages) close()                    {}
func freeSpace(string) (int64, error)           { return 0, errors.ErrUnsupported }
