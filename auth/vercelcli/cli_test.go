package vercelcli

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Test 25.
func TestConfigDirs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		goos string
		home string
		want []string
	}{
		{
			name: "XDG_DATA_HOME",
			env:  map[string]string{"XDG_DATA_HOME": "/xdg"},
			goos: "linux", home: "/home/u",
			want: []string{"/xdg/com.vercel.cli", "/home/u/.now", "/xdg/now"},
		},
		{
			name: "linux default",
			goos: "linux", home: "/home/u",
			want: []string{"/home/u/.local/share/com.vercel.cli", "/home/u/.now", "/home/u/.local/share/now"},
		},
		{
			name: "macOS default",
			goos: "darwin", home: "/Users/u",
			want: []string{"/Users/u/Library/Application Support/com.vercel.cli", "/Users/u/.now", "/Users/u/Library/Application Support/now"},
		},
		{
			name: "windows",
			env:  map[string]string{"APPDATA": `C:\Users\u\AppData\Roaming`},
			goos: "windows", home: `C:\Users\u`,
			want: []string{
				`C:\Users\u\AppData\Roaming\com.vercel.cli\Data`,
				`C:\Users\u\AppData\Roaming\xdg.data\com.vercel.cli`,
				`C:\Users\u\.now`,
				`C:\Users\u\AppData\Roaming\now\Data`,
			},
		},
		{
			name: "windows without APPDATA",
			goos: "windows", home: `C:\Users\u`,
			want: []string{
				`C:\Users\u\AppData\Roaming\com.vercel.cli\Data`,
				`C:\Users\u\AppData\Roaming\xdg.data\com.vercel.cli`,
				`C:\Users\u\.now`,
				`C:\Users\u\AppData\Roaming\now\Data`,
			},
		},
		{
			name: "windows with XDG_DATA_HOME",
			env:  map[string]string{"XDG_DATA_HOME": `D:\data`, "APPDATA": `C:\R`},
			goos: "windows", home: `C:\Users\u`,
			want: []string{`D:\data\com.vercel.cli`, `C:\Users\u\.now`, `D:\data\now`},
		},
		{
			name: "XDG_DATA_DIRS",
			env:  map[string]string{"XDG_DATA_DIRS": "/a::/b"},
			goos: "linux", home: "/home/u",
			want: []string{
				"/home/u/.local/share/com.vercel.cli", "/a/com.vercel.cli", "/b/com.vercel.cli",
				"/home/u/.now",
				"/home/u/.local/share/now", "/a/now", "/b/now",
			},
		},
		{
			name: "VERCEL_AUTH_CONFIG_DIR overrides",
			env:  map[string]string{"VERCEL_AUTH_CONFIG_DIR": "/cfg", "XDG_DATA_HOME": "/xdg"},
			goos: "linux", home: "/home/u",
			want: []string{"/cfg"},
		},
		{
			name: "no home",
			goos: "linux",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got := ConfigDirs(ConfigDirsParams{LookupEnv: lookup, GOOS: tt.goos, Home: tt.home})
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ConfigDirs (-want +got):\n%s", diff)
			}
		})
	}
}

// Test 25, continued: the first existing directory wins.
func TestCLIConfigDirChoice(t *testing.T) {
	t.Parallel()
	t.Run("legacy ~/.now when it is the first that exists", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.env = newTestEnv() // no XDG_DATA_HOME: ~/.local/share/com.vercel.cli
		require.NoError(t, os.MkdirAll(filepath.Join(f.home, ".now"), 0o755))
		assert.Equal(t, filepath.Join(f.home, ".now"), cliConfigDir(f.system()))
	})
	t.Run("the XDG directory when both exist", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		require.NoError(t, os.MkdirAll(f.cliDir(), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(f.home, ".now"), 0o755))
		assert.Equal(t, f.cliDir(), cliConfigDir(f.system()))
	})
	t.Run("nothing exists: the first candidate", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		assert.Equal(t, f.cliDir(), cliConfigDir(f.system()))
	})
}

// fakeExec records invocations of the vercel command.
type fakeExec struct {
	mu    sync.Mutex
	calls [][]string
	out   string
	err   error
}

func (e *fakeExec) run(_ context.Context, name string, args ...string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, append([]string{name}, args...))
	return []byte(e.out), e.err
}

// Test 26.
func TestCLICredentials(t *testing.T) {
	t.Parallel()
	minted := tok("team", "prj", t0.Add(12*time.Hour))

	t.Run("token without expiresAt is valid", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.writeCLIAuth(`{"// Note":"x","token":"cli_token","userId":"u"}`)
		f.srv.Respond(tokenResponse(minted))
		got, err := f.refresher().Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.NoError(t, err)
		assert.Equal(t, minted, got)
		assert.Equal(t, "Bearer cli_token", f.lastRequest().Authorization)
	})
	t.Run("token valid in the future", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.writeCLIAuth(`{"token":"cli_token","expiresAt":` + itoa(t0.Add(time.Hour).Unix()) + `}`)
		f.srv.Respond(tokenResponse(minted))
		_, err := f.refresher().Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.NoError(t, err)
	})
	for name, content := range map[string]string{
		"expired without refresh token": `{"token":"cli_token","expiresAt":` + itoa(t0.Add(-time.Hour).Unix()) + `}`,
		"expired with refresh token":    `{"token":"cli_token","refreshToken":"rt","expiresAt":` + itoa(t0.Add(-time.Hour).Unix()) + `}`,
		"no token":                      `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			path := f.writeCLIAuth(content)
			before, err := os.Stat(path)
			require.NoError(t, err)
			_, err = f.refresher().Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrCLILoginRequired)
			assert.NotContains(t, err.Error(), "cli_token")
			assert.NotContains(t, err.Error(), `"rt"`)
			assert.Zero(t, f.srv.Hits())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, content, string(data), "auth.json is never rewritten")
			after, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, before.ModTime(), after.ModTime())
		})
	}

	execCases := []struct {
		name  string
		setup func(f *fixture)
	}{
		{"VERCEL_TOKEN_STORAGE=keyring", func(f *fixture) { f.env.Set("VERCEL_TOKEN_STORAGE", "keyring") }},
		{"__VERCEL_FF_DPOP=1", func(f *fixture) {
			f.env.Set("__VERCEL_FF_DPOP", "1")
			f.writeCLIAuth(`{"token":"cli_token"}`)
		}},
		{"config.json credStorage keyring", func(f *fixture) {
			f.write(filepath.Join(f.cliDir(), "config.json"), `{"credStorage":"keyring"}`)
		}},
		{"auto without a token in auth.json", func(f *fixture) { f.env.Set("VERCEL_TOKEN_STORAGE", "auto") }},
	}
	for _, tt := range execCases {
		t.Run("exec: "+tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tt.setup(f)
			ex := &fakeExec{out: `{"token":"` + minted + `"}` + "\n"}
			r := f.refresher()
			r.CLI = &CLIExecRefresher{Command: "vercel", exec: ex.run, sys: f.system()}
			got, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
			require.NoError(t, err)
			assert.Equal(t, minted, got)
			assert.Equal(t, [][]string{{"vercel", "project", "token", "prj", "--format=json", "--scope", "team"}}, ex.calls)
			assert.Zero(t, f.srv.Hits())
		})
	}

	t.Run("auto with a token in auth.json mints", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.env.Set("VERCEL_TOKEN_STORAGE", "auto")
		f.writeCLIAuth(`{"token":"cli_token"}`)
		f.srv.Respond(tokenResponse(minted))
		ex := &fakeExec{}
		r := f.refresher()
		r.CLI = &CLIExecRefresher{exec: ex.run, sys: f.system()}
		_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.NoError(t, err)
		assert.Empty(t, ex.calls)
		assert.EqualValues(t, 1, f.srv.Hits())
	})

	for _, bad := range [][2]string{{"--api=x", "team"}, {"prj", "--scope=evil"}, {"-x", ""}, {"a/b", ""}, {"", ""}} {
		t.Run("rejected id "+bad[0]+" "+bad[1], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.link(f.cwd, `{"projectId":"`+bad[0]+`"}`)
			ex := &fakeExec{out: `{"token":"` + minted + `"}`}
			r := &CLIExecRefresher{exec: ex.run, sys: f.system()}
			_, err := r.Refresh(context.Background(), auth.Target{ProjectID: bad[0], TeamID: bad[1]})
			require.Error(t, err)
			if bad[0] != "" {
				assert.ErrorIs(t, err, ErrInvalidID)
			}
			assert.Empty(t, ex.calls, "nothing may run")
		})
	}
}

func TestCLIExecRefresher(t *testing.T) {
	t.Parallel()
	minted := tok("team", "prj", t0.Add(12*time.Hour))
	t.Run("project from the link, no scope", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.link(f.cwd, `{"projectId":"prj_link"}`)
		ex := &fakeExec{out: `{"token":"` + minted + `"}`}
		r := &CLIExecRefresher{exec: ex.run, sys: f.system()}
		_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "", TeamID: ""})
		require.NoError(t, err)
		require.Len(t, ex.calls, 1)
		assert.Equal(t, []string{"project", "token", "prj_link", "--format=json"}, ex.calls[0][1:])
	})
	t.Run("finds node_modules/.bin/vercel above the working directory", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		bin := filepath.Join(f.cwd, "node_modules", ".bin", "vercel")
		f.write(bin, "#!/bin/sh\n")
		f.cwd = filepath.Join(f.cwd, "pkg")
		require.NoError(t, os.MkdirAll(f.cwd, 0o755))
		ex := &fakeExec{out: `{"token":"` + minted + `"}`}
		r := &CLIExecRefresher{exec: ex.run, sys: f.system()}
		_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.NoError(t, err)
		assert.Equal(t, bin, ex.calls[0][0])
	})
	t.Run("bad output never echoes stdout", func(t *testing.T) {
		t.Parallel()
		for _, out := range []string{"secret-ish not json", `{"token":7}`, `{}`} {
			ex := &fakeExec{out: out}
			r := &CLIExecRefresher{Command: "vercel", exec: ex.run}
			_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "secret-ish")
		}
	})
	t.Run("default exec runs the program", func(t *testing.T) {
		t.Parallel()
		if runtime.GOOS == "windows" {
			t.Skip("needs a POSIX shell")
		}
		dir := t.TempDir()
		script := filepath.Join(dir, "vercel")
		require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho '{\"token\":\""+minted+"\",\"args\":\"'\"$*\"'\"}'\n"), 0o755))
		r := &CLIExecRefresher{Command: script}
		got, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.NoError(t, err)
		assert.Equal(t, minted, got)

		failing := filepath.Join(dir, "failing")
		require.NoError(t, os.WriteFile(failing, []byte("#!/bin/sh\necho oops >&2\nexit 3\n"), 0o755))
		_, err = (&CLIExecRefresher{Command: failing}).Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "oops")
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
