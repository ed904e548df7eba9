package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag value of a number of bytes, written plainly or with a
// binary suffix: 1048576, 1024KiB, 1MiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	num, shift := s, 0
	for _, u := range []struct {
		suffix string
		shift  int
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = n, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return fmt.Errorf("%q is not a positive size in bytes (a number, or one with KiB, MiB or GiB)", s)
	}
	*b = byteSize(n << shift)
	return nil
}
