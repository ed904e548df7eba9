package guard

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// DefaultWorkspace is the workspace of a Policy that names none when the
// Gate's target reports no working directory: the working directory of a
// sandbox made with a runtime. (One made with neither runtime nor image
// works in /vercel; NewGate takes the target's own first.)
const DefaultWorkspace = "/vercel/sandbox"

// Defaults of the transcript bounds.
const (
	DefaultMaxOutputPerCommand = 64 << 10
	DefaultMaxTranscript       = 1 << 20
)

// Names of the built-in rules that deny a command (DeniedError.Rule).
const (
	// RuleDefaultDeny: no Allow rule matches the command.
	RuleDefaultDeny = "default-deny"
	// RuleShell: the command is a shell and no rule names it.
	RuleShell = "shell"
	// RulePackages: a package executor would fetch a package that
	// Policy.Packages does not list, or was invoked in a way the policy
	// cannot verify.
	RulePackages = "packages"
	// RuleWorkspace: the working directory or an argument leaves the
	// workspace.
	RuleWorkspace = "workspace"
	// RuleSudo: the command asks for root and Policy.AllowSudo is false.
	RuleSudo = "sudo"
	// RuleEnv: the command sets an environment variable that
	// Policy.AllowEnv does not list.
	RuleEnv = "env"
)

// ErrDenied matches every *DeniedError.
var ErrDenied = errors.New("command denied by policy")

// DeniedError reports a command refused by a policy. Nothing was run.
type DeniedError struct {
	// Rule names the rule that refused the command: one of the Rule*
	// constants.
	Rule string
	// Command is the command line, with secrets redacted.
	Command string
	// Reason explains the refusal.
	Reason string
}

// Error implements error.
func (e *DeniedError) Error() string {
	return fmt.Sprintf("policy: %s denied by rule %q: %s", e.Command, e.Rule, e.Reason)
}

// Is matches ErrDenied.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// Rule allows a command. Command is the executable's name ("go", "npm");
// a name containing a slash is a path and matches only that path.
//
// Args are matched against the command's arguments position by position.
// In a pattern, "*" matches any run of characters (so "*" alone matches any
// one argument and "-run=*" any -run= option); every other character
// matches itself. A last pattern of "..." matches any remaining arguments,
// including none. A rule without Args allows the command without
// arguments only.
type Rule struct {
	// Name labels the rule in transcripts; empty means the pattern
	// itself, as String returns it.
	Name    string
	Command string
	Args    []string
}

// Allow returns a Rule for command with argument patterns, for example
// Allow("go", "test", "...") or Allow("npm", "run", "lint").
func Allow(command string, args ...string) Rule {
	return Rule{Command: command, Args: args}
}

// String returns the rule's name, or its pattern ("go test ...").
func (r Rule) String() string {
	if r.Name != "" {
		return r.Name
	}
	return strings.Join(append([]string{r.Command}, r.Args...), " ")
}

func (r Rule) matchArgs(args []string) bool {
	pats := r.Args
	for i, p := range pats {
		if p == "..." && i == len(pats)-1 {
			return true
		}
		if i >= len(args) || !globMatch(p, args[i]) {
			return false
		}
	}
	return len(args) == len(pats)
}

// globMatch matches s against a pattern where '*' matches any run of
// characters, '/' included.
func globMatch(pat, s string) bool {
	star, sBack := -1, 0
	i, j := 0, 0
	for j < len(s) {
		switch {
		case i < len(pat) && pat[i] == '*':
			star, sBack = i, j
			i++
		case i < len(pat) && pat[i] == s[j]:
			i++
			j++
		case star >= 0:
			sBack++
			i, j = star+1, sBack
		default:
			return false
		}
	}
	for i < len(pat) && pat[i] == '*' {
		i++
	}
	return i == len(pat)
}

// Policy is what a Gate may run and how. The zero value denies every
// command; add Allow rules and Packages to open it.
type Policy struct {
	// Allow lists the commands that may run.
	Allow []Rule
	// Packages lists what package executors may fetch.
	Packages []Package
	// Workspace is the absolute directory commands are confined to; empty
	// means the sandbox's working directory for a Gate, and
	// DefaultWorkspace for Check.
	Workspace string
	// AllowPaths lists further absolute directories that arguments may
	// name, for example "/tmp".
	AllowPaths []string
	// Secrets are values redacted from every output, log, error and
	// transcript, besides token-shaped strings.
	Secrets []string
	// Env is set for every command. Its values are not treated as secrets.
	Env map[string]string
	// SecretEnv is set for every command, and its values are redacted
	// like Secrets.
	SecretEnv map[string]string
	// AllowEnv lists the variables a command may set in its own Cmd.Env.
	AllowEnv []string
	// AllowSudo lets commands ask for root.
	AllowSudo bool
	// CommandTimeout applies to commands that set no Timeout; zero means
	// none.
	CommandTimeout time.Duration
	// MaxOutputPerCommand bounds the output kept of each command, in the
	// Result (per stream) and in the transcript (both streams together).
	// Zero means DefaultMaxOutputPerCommand; negative keeps nothing.
	MaxOutputPerCommand int64
	// MaxTranscript bounds the output kept in the transcript across all
	// commands. Zero means DefaultMaxTranscript; negative keeps nothing.
	MaxTranscript int64
}

// compiled is a validated Policy.
type compiled struct {
	p          Policy
	workspace  string
	allowPaths []string
	rules      map[string][]Rule // by Command
	packages   map[Ecosystem][]Package
	allowEnv   map[string]bool
}

func (p *Policy) compile(workspace string) (*compiled, error) {
	c := &compiled{p: *p, rules: map[string][]Rule{}, packages: map[Ecosystem][]Package{}, allowEnv: map[string]bool{}}
	ws := p.Workspace
	if ws == "" {
		ws = workspace
	}
	if ws == "" {
		ws = DefaultWorkspace
	}
	if !path.IsAbs(ws) {
		return nil, apierr.Invalid("Policy.Workspace", "%q is not an absolute path", ws)
	}
	c.workspace = path.Clean(ws)
	for i, d := range p.AllowPaths {
		if !path.IsAbs(d) {
			return nil, apierr.Invalid(fmt.Sprintf("Policy.AllowPaths[%d]", i), "%q is not an absolute path", d)
		}
		c.allowPaths = append(c.allowPaths, path.Clean(d))
	}
	for i, r := range p.Allow {
		field := fmt.Sprintf("Policy.Allow[%d]", i)
		name := strings.TrimSpace(r.Command)
		if name == "" || name != r.Command {
			return nil, apierr.Invalid(field, "invalid command name %q", r.Command)
		}
		name = cmdKey(name)
		if isExecutorName(path.Base(name)) {
			return nil, apierr.Invalid(field, "%s is a package executor: list what it may run in Policy.Packages", name)
		}
		for j, a := range r.Args {
			if a == "..." && j != len(r.Args)-1 {
				return nil, apierr.Invalid(field, `"..." must be the last argument pattern`)
			}
		}
		c.rules[name] = append(c.rules[name], r)
	}
	for i, pk := range p.Packages {
		if err := pk.validate(); err != nil {
			return nil, apierr.Invalid(fmt.Sprintf("Policy.Packages[%d]", i), "%v", err)
		}
		c.packages[pk.Ecosystem] = append(c.packages[pk.Ecosystem], pk)
	}
	for _, k := range p.AllowEnv {
		c.allowEnv[k] = true
	}
	for k := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, apierr.Invalid("Policy.Env", "invalid variable name %q", k)
		}
	}
	for k := range p.SecretEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, apierr.Invalid("Policy.SecretEnv", "invalid variable name %q", k)
		}
	}
	return c, nil
}

// secrets returns every value the policy redacts.
func (p *Policy) secrets() []string {
	s := slices.Clone(p.Secrets)
	for _, v := range p.SecretEnv {
		s = append(s, v)
	}
	return s
}

// Check reports whether cmd may run under p, without running it: nil, a
// *DeniedError naming the rule that refuses it, or an input error when cmd
// or p is malformed. Check is what Gate.Run does before anything is sent.
func (p *Policy) Check(cmd *command.Cmd) error {
	c, err := p.compile("")
	if err != nil {
		return err
	}
	_, err = c.check(cmd, NewRedactor(p.secrets()...))
	return err
}

// check returns the allowing rule's label, or an error. Commands in errors
// are redacted with red.
func (c *compiled) check(cmd *command.Cmd, red *Redactor) (string, error) {
	if err := cmd.Validate(); err != nil {
		return "", err
	}
	deny := func(rule, format string, args ...any) (string, error) {
		return "", &DeniedError{Rule: rule, Command: red.Redact(cmd.String()), Reason: red.Redact(fmt.Sprintf(format, args...))}
	}
	if cmd.Sudo && !c.p.AllowSudo {
		return deny(RuleSudo, "running as root is not allowed")
	}
	keys := make([]string, 0, len(cmd.Env))
	for k := range cmd.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !c.allowEnv[k] {
			return deny(RuleEnv, "setting %s is not allowed", k)
		}
	}
	dir, err := c.dir(cmd.Dir)
	if err != nil {
		return deny(RuleWorkspace, "working directory: %v", err)
	}

	label, denied := c.matchCommand(cmd.Name, cmd.Args)
	if denied != nil {
		denied.Command = red.Redact(cmd.String())
		denied.Reason = red.Redact(denied.Reason)
		return "", denied
	}
	for i, a := range cmd.Args {
		if err := c.confineArg(dir, a); err != nil {
			return deny(RuleWorkspace, "argument %d: %v", i+1, err)
		}
	}
	return label, nil
}

// dir resolves a command's working directory inside the workspace.
func (c *compiled) dir(d string) (string, error) {
	if d == "" {
		return c.workspace, nil
	}
	abs := d
	if !path.IsAbs(abs) {
		abs = path.Join(c.workspace, d)
	}
	abs = path.Clean(abs)
	if !within(c.workspace, abs) {
		return "", &PathError{Path: d, Resolved: abs, Workspace: c.workspace}
	}
	return abs, nil
}

// matchCommand judges the executable and its arguments (not their paths).
func (c *compiled) matchCommand(name string, args []string) (string, *DeniedError) {
	key := cmdKey(name)
	base := path.Base(key)
	if ex, rest, ok := executorCall(base, args); ok {
		if err := c.checkExecutor(ex, rest); err != nil {
			return "", err
		}
		return "packages (" + ex.name + ")", nil
	}
	for _, r := range c.rules[key] {
		if r.matchArgs(args) {
			return r.String(), nil
		}
	}
	if isShell(base) {
		return "", &DeniedError{Rule: RuleShell, Reason: fmt.Sprintf("%s is a shell: it would run any command line and bypass the allowlist; no rule allows this call", base)}
	}
	if strings.Contains(name, "/") {
		if rs := c.rules[base]; len(rs) > 0 {
			return "", &DeniedError{Rule: RuleDefaultDeny, Reason: fmt.Sprintf("rules allow %s by name, not the executable at %s", base, name)}
		}
	}
	reason := fmt.Sprintf("no rule allows %s", base)
	if rs := c.rules[key]; len(rs) > 0 {
		var pats []string
		for _, r := range rs {
			pats = append(pats, r.String())
		}
		reason += " with these arguments (allowed: " + strings.Join(pats, "; ") + ")"
	}
	return "", &DeniedError{Rule: RuleDefaultDeny, Reason: reason}
}

// cmdKey is how rules and commands are matched: the name itself, or a
// path cleaned lexically ("./go" stays a path, never becomes "go").
func cmdKey(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	p := path.Clean(name)
	if !strings.Contains(p, "/") {
		p = "./" + p
	}
	return p
}

var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ash": true, "ksh": true, "mksh": true,
	"fish": true, "csh": true, "tcsh": true, "busybox": true, "pwsh": true, "rbash": true,
}

func isShell(base string) bool { return shells[base] }
