package sandbox_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"testing/fstest"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/vercelcli"
	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/command/guard"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	fwdproxy "github.com/sbx-go/vercel-sandbox/sandbox/proxy"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func writeTarGz(entries []files.Entry, p files.WriteParams) error {
	return files.WriteTarGz(context.Background(), io.Discard, "/", entries, p)
}

func validate(entries ...files.Entry) error { return files.Validate("/", entries, files.WriteParams{}) }

func filesCases() []inputCase {
	return []inputCase{
		{entry: "files.Validate", field: "entries[0]", call: func(*inputFixture) error { return validate(files.Entry{}) }},
		{entry: "files.Validate", field: "cwd", call: func(*inputFixture) error {
			return files.Validate("rel", []files.Entry{files.FromBytes("a", []byte(""))}, files.WriteParams{})
		}},
		{entry: "files.Length", field: "entries[0].Path", call: func(*inputFixture) error {
			return ignore3(files.Length("/", []files.Entry{files.FromBytes("a/", []byte(""))}, files.WriteParams{}))
		}},
		{entry: "files.WriteTarGz", field: "w", call: func(f *inputFixture) error {
			return files.WriteTarGz(f.ctx, nil, "/", []files.Entry{files.FromBytes("a", []byte(""))}, files.WriteParams{})
		}},
		{entry: "files.FromBytes", field: "entries[0].Path", call: func(*inputFixture) error { return validate(files.FromBytes(nul, nil)) }},
		{entry: "files.FromBytes", field: "entries[0].Path", call: func(*inputFixture) error { return validate(files.FromBytes(badUTF8, nil)) }},
		{entry: "files.Validate", field: "cwd", call: func(*inputFixture) error {
			return files.Validate("/\xff", []files.Entry{files.FromBytes("a", []byte(""))}, files.WriteParams{})
		}},
		{entry: "files.FromBytes", field: "entries[0].Path", call: func(*inputFixture) error { return validate(files.FromBytes("a/", []byte(""))) }},
		{entry: "files.FromReader", field: "entries[0]", call: func(*inputFixture) error { return validate(files.FromReader("a", nil, 0)) }},
		{entry: "files.FromReader", field: "entries[0].Size", call: func(*inputFixture) error {
			return validate(files.FromReader("a", eofReader{}, -1))
		}},
		{entry: "files.FromFile", field: "localPath", call: func(*inputFixture) error { return ignore(files.FromFile("a", "")) }},
		{entry: "files.FromFile", field: "localPath", call: func(f *inputFixture) error { return ignore(files.FromFile("a", ".")) }},
		{entry: "files.FromDir", field: "localDir", call: func(*inputFixture) error { return ignore(files.FromDir("/dst", "", files.TreeParams{})) }},
		{entry: "files.FromFS", field: "fsys", call: func(*inputFixture) error { return ignore(files.FromFS("/dst", nil, ".", files.TreeParams{})) }},
		{entry: "files.FromFS", field: "root", call: func(*inputFixture) error {
			return ignore(files.FromFS("/dst", fstest.MapFS{}, "../x", files.TreeParams{}))
		}},
		{entry: "files.Entry.WithMode", field: "entries[0].Mode", call: func(*inputFixture) error {
			return validate(files.FromBytes("a", []byte("")).WithMode(fs.ModeDir))
		}},
		{entry: "files.Entry.WithPath", field: "entries[0].Path", call: func(*inputFixture) error {
			return validate(files.FromBytes("a", []byte("")).WithPath(""))
		}},
		{entry: "files.WriteTarGz", field: "Level", call: func(*inputFixture) error {
			return writeTarGz([]files.Entry{files.FromBytes("a", []byte(""))}, files.WriteParams{Level: 42})
		}},
		{entry: "files.WriteTarGz", field: "Level", call: func(*inputFixture) error {
			return writeTarGz([]files.Entry{files.FromBytes("a", []byte(""))}, files.WriteParams{Level: 1, Stored: true})
		}},
		{entry: "files.FromFS", field: "Symlinks", call: func(*inputFixture) error {
			return ignore(files.FromFS("/dst", fstest.MapFS{}, ".", files.TreeParams{Symlinks: 99}))
		}},
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func commandCases() []inputCase {
	var cs []inputCase
	for _, bc := range badCmds() {
		cs = append(cs, inputCase{entry: "command.Cmd.Validate", field: bc.field, call: func(*inputFixture) error { return bc.cmd(bareCmd).Validate() }})
	}
	return append(cs, []inputCase{
		{entry: "command.Cmd.Validate", field: "Cmd.Timeout", call: func(*inputFixture) error {
			return (&command.Cmd{Name: "x", Timeout: -1}).Validate()
		}},
		{entry: "command.ParseRef", field: "Ref", call: func(*inputFixture) error { return ignore(command.ParseRef("a/b/c/d")) }},
		{entry: "command.Ref.UnmarshalText", field: "Ref", call: func(*inputFixture) error {
			var r command.Ref
			return r.UnmarshalText([]byte(""))
		}},
		{entry: "command.ParseSignal", field: "signal", call: func(*inputFixture) error { return ignore(command.ParseSignal("SIGNOPE")) }},
		{entry: "command.Handle.Signal", field: "signal", call: func(f *inputFixture) error { return f.h.Signal(f.ctx, -1) }},
		{entry: "command.Handle.Signal", field: "signal", call: func(f *inputFixture) error { return f.h.Signal(f.ctx, 0) }},
		{entry: "command.Cmd.Run", field: "Cmd", call: func(f *inputFixture) error { return ignore(bareCmd("ls").Run(f.ctx)) }},
		{entry: "command.Cmd.Output", field: "Cmd", call: func(f *inputFixture) error { return ignore(bareCmd("ls").Output(f.ctx)) }},
		{entry: "command.Cmd.CombinedOutput", field: "Cmd", call: func(f *inputFixture) error {
			return ignore(bareCmd("ls").CombinedOutput(f.ctx))
		}},
		{entry: "command.Cmd.Start", field: "Cmd", call: func(f *inputFixture) error { return ignore((*command.Cmd)(nil).Start(f.ctx)) }},
		{entry: "command.Handle.Terminate", field: "grace", call: func(f *inputFixture) error { return f.h.Terminate(f.ctx, -time.Second) }},
	}...)
}

func ptyCases() []inputCase {
	return []inputCase{
		{entry: "pty.Start", field: "sandbox", call: func(f *inputFixture) error { return ignore(pty.Start(f.ctx, nil, &pty.Cmd{})) }},
		{entry: "pty.Start", field: "Cmd", call: func(f *inputFixture) error { return ignore(pty.Start(f.ctx, f.sb, nil)) }},
		{entry: "pty.Run", field: "Rows", call: func(f *inputFixture) error { return ignore(pty.Run(f.ctx, f.sb, &pty.Cmd{Rows: -1})) }},
		{entry: "pty.Dial", field: "Env", call: func(f *inputFixture) error {
			return ignore(pty.Dial(f.ctx, sandbox.Interactive{}, &pty.Cmd{Env: map[string]string{"A=B": "x"}}))
		}},
		{entry: "pty.Dial", field: "Interactive", call: func(f *inputFixture) error {
			return ignore(pty.Dial(f.ctx, sandbox.Interactive{}, &pty.Cmd{}))
		}},
		{entry: "pty.Session.Resize", field: "Resize", call: func(*inputFixture) error { return (&pty.Session{}).Resize(0, 80) }},
	}
}

func workloadCases() []inputCase {
	return []inputCase{
		{entry: "workload.Create", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore(workload.Create(f.ctx, nil, sandbox.CreateParams{}))
		}},
		{entry: "workload.Create", field: "Name", call: func(f *inputFixture) error {
			return ignore(workload.Create(f.ctx, f.c, sandbox.CreateParams{Name: nul}))
		}},
		{entry: "workload.Acquire", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore(workload.Acquire(f.ctx, nil, sandbox.CreateParams{}, sandbox.HealthParams{}))
		}},
		{entry: "workload.CodeInput.Validate", is: workload.ErrInvalidInput, call: func(*inputFixture) error {
			return workload.CodeInput{Code: "x", TimeoutMs: -1}.Validate()
		}},
		{entry: "workload.CodeExecutor.Execute", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore((&workload.CodeExecutor{Runner: &workload.Runner{Client: f.c}}).Execute(f.ctx, workload.CodeInput{}))
		}},
		{entry: "workload.Runner.Run", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore((&workload.Runner{}).Run(f.ctx, workload.Job{}))
		}},
		{entry: "workload.StopTask", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore(workload.StopTask(f.ctx, f.c, workload.TaskRef{}))
		}},
		{entry: "workload.StopTask", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore(workload.StopTask(f.ctx, nil, workload.TaskRef{SandboxName: "x"}))
		}},
		{entry: "workload.NewTask", field: "sb", call: func(f *inputFixture) error {
			return workload.NewTask(nil, workload.TaskOptions{}).Do(f.ctx, "step", func(context.Context, *sandbox.Sandbox) error { return nil })
		}},
		{entry: "workload.Task.Run", field: "Cmd", call: func(f *inputFixture) error {
			return ignore(workload.NewTask(f.sb, workload.TaskOptions{}).Run(f.ctx, nil))
		}},
		{entry: "workload.Task.Run", field: "Cmd.Name", call: func(f *inputFixture) error {
			return ignore(workload.NewTask(f.sb, workload.TaskOptions{}).Run(f.ctx, &command.Cmd{}))
		}},
		{entry: "workload.Task.Do", field: "fn", call: func(f *inputFixture) error {
			return workload.NewTask(f.sb, workload.TaskOptions{}).Do(f.ctx, "step", nil)
		}},
		{entry: "workload.CommandStep", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore((&workload.Runner{Client: f.c}).Run(f.ctx, workload.Job{Setup: []workload.Step{workload.CommandStep("s", nil)}}))
		}},
		{entry: "workload.WriteFilesStep", is: workload.ErrInvalidInput, call: func(f *inputFixture) error {
			return ignore((&workload.Runner{Client: f.c}).Run(f.ctx, workload.Job{Setup: []workload.Step{workload.WriteFilesStep("s", files.Entry{})}}))
		}},
	}
}

func guardCases() []inputCase {
	return []inputCase{
		{entry: "guard.WithOutput", field: "WithOutput", call: func(f *inputFixture) error {
			return ignore(guard.NewGate(f.sb, guard.Policy{}, nil, guard.WithOutput(nil)))
		}},
		{entry: "guard.Duration.UnmarshalText", field: "Duration", call: func(*inputFixture) error {
			var d guard.Duration
			return d.UnmarshalText([]byte("soon"))
		}},
		{entry: "guard.Redactor.Writer", field: "w", call: func(*inputFixture) error {
			return ignore(guard.NewRedactor("s3cret").Writer(nil).Write([]byte("x")))
		}},
		{entry: "guard.Transcript.WriteTo", field: "w", call: func(*inputFixture) error {
			return ignore(guard.Transcript{}.WriteTo(nil))
		}},
		{entry: "guard.Gate.Check", field: "Gate", call: func(*inputFixture) error {
			return (&guard.Gate{}).Check(&command.Cmd{Name: "ls"})
		}},
		{entry: "guard.Gate.Run", field: "Gate", call: func(f *inputFixture) error {
			return ignore((*guard.Gate)(nil).Run(f.ctx, &command.Cmd{Name: "ls"}))
		}},
		{entry: "guard.NewGate", field: "Target", call: func(*inputFixture) error { return ignore(guard.NewGate(nil, guard.Policy{})) }},
		{entry: "guard.NewGate", field: "Workspace", call: func(f *inputFixture) error {
			return ignore(guard.NewGate(f.sb, guard.Policy{Workspace: "rel"}))
		}},
		{entry: "guard.Allow", field: "Allow[0]", call: func(f *inputFixture) error {
			return ignore(guard.NewGate(f.sb, guard.Policy{Allow: []guard.Rule{guard.Allow("")}}))
		}},
		{entry: "guard.NPM", field: "Packages[0]", call: func(f *inputFixture) error {
			return ignore(guard.NewGate(f.sb, guard.Policy{Packages: []guard.Package{guard.NPM("")}}))
		}},
		{entry: "guard.PyPI", field: "Packages[0]", call: func(f *inputFixture) error {
			return ignore(guard.NewGate(f.sb, guard.Policy{Packages: []guard.Package{guard.PyPI(nul)}}))
		}},
		{entry: "guard.Policy.Check", field: "Cmd", call: func(*inputFixture) error { return (&guard.Policy{}).Check(nil) }},
		{entry: "guard.Gate.Check", field: "Cmd", call: func(f *inputFixture) error {
			g, err := guard.NewGate(f.sb, guard.Policy{})
			if err != nil {
				return errors.New("NewGate failed: " + err.Error())
			}
			return g.Check(nil)
		}},
		{entry: "guard.Gate.Run", field: "Cmd", call: func(f *inputFixture) error {
			g, err := guard.NewGate(f.sb, guard.Policy{})
			if err != nil {
				return errors.New("NewGate failed: " + err.Error())
			}
			return ignore(g.Run(f.ctx, nil))
		}},
		{entry: "guard.Confine", field: "workspace", call: func(*inputFixture) error { return ignore(guard.Confine("rel", "", "a")) }},
	}
}

func authCases() []inputCase {
	static := auth.Static(auth.Credentials{Token: "tok", TeamID: "team", ProjectID: "prj"})
	return []inputCase{
		{entry: "auth.Chain", field: "providers[0]", call: func(f *inputFixture) error {
			return ignore(auth.Chain(nil).Credentials(f.ctx))
		}},
		{entry: "auth.Chain", field: "providers[1]", call: func(f *inputFixture) error {
			return ignore(auth.Chain(static, nil).Credentials(f.ctx))
		}},
		{entry: "auth.ProviderFunc.Credentials", field: "ProviderFunc", call: func(f *inputFixture) error {
			return ignore(auth.ProviderFunc(nil).Credentials(f.ctx))
		}},
		{entry: "auth.RefresherFunc.Refresh", field: "RefresherFunc", call: func(f *inputFixture) error {
			return ignore(auth.RefresherFunc(nil).Refresh(f.ctx, auth.Target{ProjectID: "prj", TeamID: "team"}))
		}},
		{entry: "auth.NewOIDCProvider", field: "OIDCOptions", call: func(f *inputFixture) error {
			return ignore(auth.NewOIDCProvider(auth.OIDCOptions{}).Credentials(f.ctx))
		}},
		{entry: "auth.OIDCProvider.Credentials", field: "OIDCProvider", call: func(f *inputFixture) error {
			return ignore((&auth.OIDCProvider{}).Credentials(f.ctx))
		}},
		{entry: "auth.FromEnv", field: "name", call: func(f *inputFixture) error { return ignore3(auth.FromEnv("")(f.ctx)) }},
		{entry: "auth.FromFile", field: "path", call: func(f *inputFixture) error { return ignore3(auth.FromFile("")(f.ctx)) }},
		{entry: "vercelcli.LinkedProjectRefresher.Refresh", is: vercelcli.ErrInvalidID, call: func(f *inputFixture) error {
			return ignore((&vercelcli.LinkedProjectRefresher{}).Refresh(f.ctx, auth.Target{ProjectID: "../p", TeamID: "team"}))
		}},
		{entry: "vercelcli.LinkedProjectRefresher.Refresh", is: vercelcli.ErrInvalidID, call: func(f *inputFixture) error {
			return ignore((&vercelcli.LinkedProjectRefresher{ProjectID: "prj"}).Refresh(f.ctx, auth.Target{ProjectID: "", TeamID: "team/x"}))
		}},
		{entry: "auth.Static", is: auth.ErrMissingParams, call: func(f *inputFixture) error {
			return ignore(auth.Static(auth.Credentials{Token: "", TeamID: "team", ProjectID: "prj"}).Credentials(f.ctx))
		}},
		{entry: "auth.ParseClaims", is: auth.ErrInvalidOIDCToken, call: func(*inputFixture) error { return ignore(auth.ParseClaims("x")) }},
		{entry: "vercelcli.CLIExecRefresher.Refresh", is: vercelcli.ErrInvalidID, call: func(f *inputFixture) error {
			return ignore((&vercelcli.CLIExecRefresher{}).Refresh(f.ctx, auth.Target{ProjectID: "-p", TeamID: "t"}))
		}},
	}
}

func proxyCases() []inputCase {
	newVerifier := func(o fwdproxy.Option) error { return ignore(fwdproxy.NewVerifier(nil, o)) }
	return []inputCase{
		{entry: "proxy.NewVerifier", field: "WithRefreshInterval", call: func(*inputFixture) error {
			return newVerifier(fwdproxy.WithRefreshInterval(0))
		}},
		{entry: "proxy.WithOrigin", field: "WithOrigin", call: func(*inputFixture) error {
			return newVerifier(fwdproxy.WithOrigin("https://broker.example.com/path"))
		}},
		{entry: "proxy.WithTrustedIssuer", field: "WithTrustedIssuer", call: func(*inputFixture) error {
			return newVerifier(fwdproxy.WithTrustedIssuer("http://issuer.example.com"))
		}},
		{entry: "proxy.WithClock", field: "WithClock", call: func(*inputFixture) error { return newVerifier(fwdproxy.WithClock(nil)) }},
		{entry: "proxy.WithHTTPClient", field: "WithHTTPClient", call: func(*inputFixture) error {
			return newVerifier(fwdproxy.WithHTTPClient(nil))
		}},
		{entry: "proxy.WithInvalidRequestHandler", field: "WithInvalidRequestHandler", call: func(*inputFixture) error {
			return newVerifier(fwdproxy.WithInvalidRequestHandler(nil))
		}},
		{entry: "proxy.WithRefreshInterval", field: "WithRefreshInterval", call: func(*inputFixture) error {
			return newVerifier(fwdproxy.WithRefreshInterval(-time.Second))
		}},
		{entry: "proxy.Verifier.Verify", field: "r", call: func(*inputFixture) error {
			v, err := fwdproxy.NewVerifier()
			if err != nil {
				return errors.New("NewVerifier failed: " + err.Error())
			}
			return ignore(v.Verify(nil))
		}},
		{entry: "proxy.Verifier.Verify", field: "Verifier", call: func(f *inputFixture) error {
			r := httptest.NewRequestWithContext(f.ctx, http.MethodGet, "/", nil)
			return ignore((&fwdproxy.Verifier{}).Verify(r))
		}},
	}
}

func localCases() []inputCase {
	return []inputCase{
		{entry: "local.WithDir", field: "WithDir", call: func(*inputFixture) error { return ignore(local.New(local.WithDir(nul))) }},
		{entry: "local.New", field: "WithStopDelay", call: func(*inputFixture) error { return ignore(local.New(local.WithStopDelay(-1))) }},
		{entry: "local.WithStopDelay", field: "WithStopDelay", call: func(*inputFixture) error { return ignore(local.New(local.WithStopDelay(-1))) }},
		{entry: "local.WithLogsRace", field: "WithLogsRace", call: func(*inputFixture) error { return ignore(local.New(local.WithLogsRace(-1))) }},
		{entry: "local.WithFreshTokenRefusals", field: "WithFreshTokenRefusals", call: func(*inputFixture) error {
			return ignore(local.New(local.WithFreshTokenRefusals(-1)))
		}},
		{entry: "local.WithRequestHistory", field: "WithRequestHistory", call: func(*inputFixture) error {
			return ignore(local.New(local.WithRequestHistory(0)))
		}},
		{entry: "local.WithOutputBudget", field: "WithOutputBudget", call: func(*inputFixture) error {
			return ignore(local.New(local.WithOutputBudget(-1)))
		}},
		{entry: "local.WithOutputLimit", field: "WithOutputLimit", call: func(*inputFixture) error {
			return ignore(local.New(local.WithOutputLimit(-1)))
		}},
		{entry: "local.WithCreateRateLimit", field: "WithCreateRateLimit", call: func(*inputFixture) error {
			return ignore(local.New(local.WithCreateRateLimit(-1, time.Second)))
		}},
		{entry: "local.WithMaxTimeout", field: "WithMaxTimeout", call: func(*inputFixture) error {
			return ignore(local.New(local.WithMaxTimeout(-1)))
		}},
		{entry: "local.WithMiddleware", field: "WithMiddleware", call: func(*inputFixture) error {
			return ignore(local.New(local.WithMiddleware(nil)))
		}},
		{entry: "local.WithMount", field: "WithMount", call: func(*inputFixture) error {
			return ignore(local.New(local.WithMount("rel", nil)))
		}},
		{entry: "local.Server.HostPath", field: "sandboxName", call: func(f *inputFixture) error {
			return ignore(f.env.srv.HostPath("", "/a"))
		}},
		{entry: "local.Server.Output", field: "commandID", call: func(f *inputFixture) error {
			return ignore3(f.env.srv.Output(""))
		}},
		{entry: "local.Server.ExpireSession", field: "sessionID", call: func(f *inputFixture) error {
			return f.env.srv.ExpireSession("")
		}},
		{entry: "local.Server.Stop", field: "sessionID", call: func(f *inputFixture) error { return f.env.srv.Stop("") }},
		{entry: "local.Server.Serve", field: "ln", call: func(*inputFixture) error { return serveNil((*local.Server).Serve) }},
		{entry: "local.Listen", field: "WithStopDelay", call: func(f *inputFixture) error {
			srv, _, err := local.Listen(f.ctx, local.WithStopDelay(-1))
			if srv != nil {
				srv.Close()
			}
			return err
		}},
		{entry: "local.Server.Start", field: "ln", call: func(*inputFixture) error { return serveNil((*local.Server).Start) }},
		{entry: "fault.Parse", is: fault.ErrInvalid, call: func(*inputFixture) error { return ignore(fault.Parse("GET /a status=1")) }},
		{entry: "fault.Fault.Validate", is: fault.ErrInvalid, call: func(*inputFixture) error { return fault.Fault{Times: -1}.Validate() }},
		{entry: "fault.Fault.UnmarshalJSON", is: fault.ErrInvalid, call: func(*inputFixture) error {
			var fl fault.Fault
			return fl.UnmarshalJSON([]byte(`{"staus":500}`))
		}},
		{entry: "fault.Injector.Add", is: fault.ErrInvalid, call: func(*inputFixture) error {
			return ignore(fault.NewInjector().Add(fault.Fault{Status: 429, AfterHandler: true}))
		}},
		{entry: "fault.RateLimit", is: fault.ErrInvalid, call: func(*inputFixture) error { return fault.RateLimit(-1, 0).Validate() }},
	}
}

// serveNil calls serve with a nil listener on a fresh server.
func serveNil(serve func(*local.Server, net.Listener) error) error {
	srv, err := local.New()
	if err != nil {
		return err
	}
	defer srv.Close()
	return serve(srv, nil)
}
