// Package host is the outside world as the credential providers see it:
// environment, working directory, home directory, operating system, files
// and time. Tests replace any of them; a zero System is the real process.
package host

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

// System is the outside world. A nil or empty field means the real process
// value, so the zero System is the real one.
type System struct {
	LookupEnv   func(key string) (string, bool) // default os.LookupEnv
	Getwd       func() (string, error)          // default os.Getwd
	UserHomeDir func() (string, error)          // default os.UserHomeDir
	GOOS        string                          // default runtime.GOOS
	FS          FS                              // default OSFS
	Clock       Clock                           // default the wall clock
}

// Lookup reads the environment variable key.
func (s System) Lookup(key string) (string, bool) {
	if s.LookupEnv != nil {
		return s.LookupEnv(key)
	}
	return os.LookupEnv(key)
}

// Env returns the value of key, "" when unset.
func (s System) Env(key string) string {
	v, _ := s.Lookup(key)
	return v
}

// Wd returns the working directory.
func (s System) Wd() (string, error) {
	if s.Getwd != nil {
		return s.Getwd()
	}
	return os.Getwd()
}

// Home returns the home directory, "" when unknown.
func (s System) Home() string {
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

// OS returns the operating system, as runtime.GOOS names it.
func (s System) OS() string {
	if s.GOOS != "" {
		return s.GOOS
	}
	return runtime.GOOS
}

// Files returns the file system.
func (s System) Files() FS {
	if s.FS != nil {
		return s.FS
	}
	return OSFS{}
}

// Now returns the current time.
func (s System) Now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}
