package vercelcli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth/internal/errmsg"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

// ConfigDirsParams describes the machine ConfigDirs answers for.
type ConfigDirsParams struct {
	// LookupEnv reads XDG_DATA_HOME, XDG_DATA_DIRS, APPDATA and
	// VERCEL_AUTH_CONFIG_DIR (which, when set, is the only entry); nil
	// reads nothing.
	LookupEnv func(key string) (string, bool)
	// GOOS is the operating system, as runtime.GOOS names it.
	GOOS string
	// Home is the user's home directory; empty, no directory under it is
	// listed.
	Home string
}

// ConfigDirs lists, best first, the directories where the Vercel CLI may
// keep auth.json and config.json on the machine p describes. The CLI uses
// the first one that exists, or else the first one.
//
// The order is: <data>/com.vercel.cli, where <data> is XDG_DATA_HOME, else
// ~/Library/Application Support on darwin, %APPDATA%\com.vercel.cli\Data on
// windows, ~/.local/share elsewhere; then each XDG_DATA_DIRS entry; on windows
// without XDG_DATA_HOME, %APPDATA%\xdg.data\com.vercel.cli; then the legacy
// ~/.now; then the same data directories with the legacy name "now".
//
// ConfigDirs does no I/O.
func ConfigDirs(p ConfigDirsParams) []string {
	lookupEnv, goos, home := p.LookupEnv, p.GOOS, p.Home
	get := func(k string) string {
		if lookupEnv == nil {
			return ""
		}
		v, _ := lookupEnv(k)
		return v
	}
	if d := get("VERCEL_AUTH_CONFIG_DIR"); d != "" {
		return []string{d}
	}
	win := goos == "windows"
	join := func(base string, elem ...string) string {
		if base == "" {
			return ""
		}
		if win {
			return strings.TrimRight(base, `\/`) + `\` + strings.Join(elem, `\`)
		}
		return path.Join(append([]string{base}, elem...)...)
	}
	xdgHome := get("XDG_DATA_HOME")
	appData := get("APPDATA")
	if appData == "" {
		appData = join(home, "AppData", "Roaming")
	}
	var dataDirs []string
	sep := ":"
	if win {
		sep = ";"
	}
	for _, d := range strings.Split(get("XDG_DATA_DIRS"), sep) {
		if d != "" {
			dataDirs = append(dataDirs, d)
		}
	}
	appDirs := func(name string) []string {
		var out []string
		switch {
		case xdgHome != "":
			out = append(out, join(xdgHome, name))
		case win:
			out = append(out, join(appData, name, "Data"))
		case goos == "darwin":
			out = append(out, join(home, "Library", "Application Support", name))
		default:
			out = append(out, join(home, ".local", "share", name))
		}
		for _, d := range dataDirs {
			out = append(out, join(d, name))
		}
		return out
	}

	dirs := appDirs("com.vercel.cli")
	if win && xdgHome == "" {
		dirs = append(dirs, join(appData, "xdg.data", "com.vercel.cli"))
	}
	dirs = append(dirs, join(home, ".now"))
	dirs = append(dirs, appDirs("now")...)

	out := dirs[:0]
	for _, d := range dirs {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// userDataDir is the base of the OIDC token cache: XDG_DATA_HOME, else
// ~/Library/Application Support on darwin, %LOCALAPPDATA% on windows,
// ~/.local/share elsewhere. It is "" when it cannot be determined.
func userDataDir(sys host.System) string {
	if d := sys.Env("XDG_DATA_HOME"); d != "" {
		return d
	}
	if sys.OS() == "windows" {
		return sys.Env("LOCALAPPDATA")
	}
	home := sys.Home()
	if home == "" {
		return ""
	}
	if sys.OS() == "darwin" {
		return filepath.Join(home, "Library", "Application Support")
	}
	return filepath.Join(home, ".local", "share")
}

// cliConfigDir returns the first existing entry of ConfigDirs, or the first.
func cliConfigDir(sys host.System) string {
	dirs := ConfigDirs(ConfigDirsParams{LookupEnv: sys.Lookup, GOOS: sys.OS(), Home: sys.Home()})
	for _, d := range dirs {
		if fi, err := sys.Files().Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	if len(dirs) == 0 {
		return ""
	}
	return dirs[0]
}

// cliAuth is the part of the CLI's auth.json the library reads. It is never
// written back.
type cliAuth struct {
	Token        string   `json:"token"`
	RefreshToken string   `json:"refreshToken"`
	ExpiresAt    *float64 `json:"expiresAt"` // Unix seconds
}

// readCLIAuth reads dir/auth.json. A missing file gives a zero cliAuth.
func readCLIAuth(sys host.System, dir string) (cliAuth, string, error) {
	p := filepath.Join(dir, "auth.json")
	var a cliAuth
	data, err := sys.Files().ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return a, p, nil
	}
	if err != nil {
		return a, p, &errmsg.Error{Msg: "cannot read the Vercel CLI login", Cause: err}
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return cliAuth{}, p, &errmsg.Error{Msg: "cannot parse the Vercel CLI login " + p}
	}
	return a, p, nil
}

// cliToken returns the CLI user token from auth.json when it is valid for at
// least buffer more. It never refreshes or rewrites the file.
func cliToken(a cliAuth, p string, now time.Time, buffer time.Duration) (string, error) {
	if a.Token == "" {
		return "", &errmsg.Error{Msg: "no Vercel CLI login in " + p + "; run `vercel login`", Sentinel: ErrCLILoginRequired}
	}
	if a.ExpiresAt != nil {
		exp := time.Unix(int64(*a.ExpiresAt), 0)
		if exp.Before(now.Add(buffer)) {
			hint := "the Vercel CLI login in " + p + " has expired; run `vercel login`"
			if a.RefreshToken != "" {
				hint += " or any vercel command (such as `vercel whoami`) to renew it"
			}
			return "", &errmsg.Error{Msg: hint, Sentinel: ErrCLILoginRequired}
		}
	}
	return a.Token, nil
}

// credStorage returns where the CLI keeps its login: VERCEL_TOKEN_STORAGE,
// else credStorage in config.json; "" when unknown.
func credStorage(sys host.System, dir string) string {
	if v := sys.Env("VERCEL_TOKEN_STORAGE"); v != "" {
		return strings.ToLower(v)
	}
	data, err := sys.Files().ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return ""
	}
	var cfg struct {
		CredStorage string `json:"credStorage"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return ""
	}
	return strings.ToLower(cfg.CredStorage)
}
