package auth

import (
	"io/fs"
	"os"
	"runtime"
	"time"
)

// Clock tells the time. Every expiry and backoff decision reads it, so tests
// can move time forward without sleeping.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// FS is the part of a file system the providers use. OSFS is the real one.
type FS interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Stat(name string) (fs.FileInfo, error)
	MkdirAll(path string, perm fs.FileMode) error
	Rename(oldpath, newpath string) error
	Remove(name string) error
}

// OSFS is the operating system's file system.
type OSFS struct{}

// ReadFile calls os.ReadFile.
func (OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// WriteFile calls os.WriteFile.
func (OSFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return os.WriteFile(name, data, perm)
}

// Stat calls os.Stat.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// MkdirAll calls os.MkdirAll.
func (OSFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

// Rename calls os.Rename.
func (OSFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove calls os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// System is the outside world as the providers see it: environment, working
// directory, home directory, operating system, files and time. A nil or empty
// field means the real process value, so the zero System is the real one.
type System struct {
	LookupEnv   func(key string) (string, bool) // default os.LookupEnv
	Getwd       func() (string, error)          // default os.Getwd
	UserHomeDir func() (string, error)          // default os.UserHomeDir
	GOOS        string                          // default runtime.GOOS
	FS          FS                              // default OSFS
	Clock       Clock                           // default the wall clock
}

func (s System) lookup(key string) (string, bool) {
	if s.LookupEnv != nil {
		return s.LookupEnv(key)
	}
	return os.LookupEnv(key)
}

// env returns the value of key, "" when unset.
func (s System) env(key string) string {
	v, _ := s.lookup(key)
	return v
}

func (s System) getwd() (string, error) {
	if s.Getwd != nil {
		return s.Getwd()
	}
	return os.Getwd()
}

func (s System) home() string {
	f := s.UserHomeDir
	if f == nil {
		f = os.UserHomeDir
	}
	h, err := f()
	if err != nil {
		return ""
	}
	return h
}

func (s System) goos() string {
	if s.GOOS != "" {
		return s.GOOS
	}
	return runtime.GOOS
}

func (s System) fs() FS {
	if s.FS != nil {
		return s.FS
	}
	return OSFS{}
}

func (s System) clock() Clock {
	if s.Clock != nil {
		return s.Clock
	}
	return systemClock{}
}
