package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// A fresh sandbox of the real image already has its base folders and its
// own account files before its first command: clients (the official SDK
// among them) make /tmp/x with fs/mkdir, expect fs/mkdir /tmp to be refused
// as existing, and run useradd and groupadd, which rewrite /etc/passwd,
// /etc/group, /etc/shadow and /etc/gshadow. The server makes them in the
// sandbox's directory (Cmd.Dir) when a session starts, keeping what a
// snapshot or an earlier session left. Executors that give a command a
// root of its own find the account files in Cmd.EtcDir.

// DefaultUser is the user of a sandbox's commands run without sudo, as on
// the image; its home is /home/DefaultUser.
const DefaultUser = "vercel-sandbox"

// baseDirs are made in every sandbox, with their modes.
var baseDirs = []struct {
	path string
	mode fs.FileMode
}{
	{"tmp", 0o777 | fs.ModeSticky},
	{"root", 0o700},
	{"home/" + DefaultUser, 0o755},
	{"vercel/sandbox", 0o755},
	{"etc", 0o755},
}

// etcFiles are the account files of a fresh sandbox: root, the default
// user (uid 1000, allowed sudo through group wheel) and nobody.
var etcFiles = []struct {
	name    string
	mode    fs.FileMode
	content string
}{
	{"passwd", 0o644, "root:x:0:0:root:/root:/bin/bash\n" +
		DefaultUser + ":x:1000:1000::/home/" + DefaultUser + ":/bin/bash\n" +
		"nobody:x:65534:65534:Kernel Overflow User:/:/sbin/nologin\n"},
	{"group", 0o644, "root:x:0:\nwheel:x:10:" + DefaultUser + "\n" + DefaultUser + ":x:1000:\nnobody:x:65534:\n"},
	{"shadow", 0o600, "root:*:19000:0:99999:7:::\n" + DefaultUser + ":!!:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n"},
	{"gshadow", 0o600, "root:::\nwheel:::" + DefaultUser + "\n" + DefaultUser + ":!::\nnobody:::\n"},
}

// etcDir is the host directory of a sandbox's own account files.
func etcDir(sb *sandboxRec) string { return filepath.Join(sb.dir, "etc") }

// makeBase creates what is missing of the base folders and account files
// of sb.
func makeBase(sb *sandboxRec) error {
	for _, d := range baseDirs {
		p := filepath.Join(sb.dir, filepath.FromSlash(d.path))
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(p, d.mode); err != nil {
			return err
		}
	}
	for _, f := range etcFiles {
		p := filepath.Join(etcDir(sb), f.name)
		file, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = file.WriteString(f.content)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
