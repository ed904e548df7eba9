package guard

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Ecosystem is a package registry that package executors fetch from.
type Ecosystem string

// Ecosystems.
const (
	// EcosystemNPM is the npm registry: npx, pnpx, npm exec (npm x),
	// pnpm dlx, yarn dlx, bunx and bun x.
	EcosystemNPM Ecosystem = "npm"
	// EcosystemPyPI is the Python Package Index: uvx, uv tool run and
	// pipx run.
	EcosystemPyPI Ecosystem = "pypi"
)

// Package is a package that package executors may fetch and run.
type Package struct {
	Ecosystem Ecosystem
	// Name is the registry name: "eslint", "@biomejs/biome", "ruff".
	Name string
	// Version, when set, is the only version spec allowed, and the
	// command must state it ("eslint@9" for Version "9"). Empty allows any
	// version, and none.
	Version string
	// Bins are the commands the package provides besides the one named
	// like it, for invocations such as "npx -p typescript tsc".
	Bins []string
}

// NPM returns an npm Package; spec is a name with an optional version
// ("eslint", "eslint@9", "@scope/pkg@1.2.3").
func NPM(spec string, bins ...string) Package {
	name, version, err := parseNPMSpec(spec)
	if err != nil {
		name, version = spec, "" // reported when the policy is used
	}
	return Package{Ecosystem: EcosystemNPM, Name: name, Version: version, Bins: bins}
}

// PyPI returns a PyPI Package; spec is a name with an optional version
// ("ruff", "ruff@0.6.9", "ruff==0.6.9").
func PyPI(spec string, bins ...string) Package {
	name, version, err := parsePyPISpec(spec)
	if err != nil {
		name, version = spec, "" // reported when the policy is used
	}
	return Package{Ecosystem: EcosystemPyPI, Name: name, Version: version, Bins: bins}
}

// String returns ecosystem:name[@version].
func (p Package) String() string {
	s := string(p.Ecosystem) + ":" + p.Name
	if p.Version != "" {
		s += "@" + p.Version
	}
	return s
}

func (p Package) validate() error {
	var name, version string
	var err error
	switch p.Ecosystem {
	case EcosystemNPM:
		name, version, err = parseNPMSpec(p.Name)
	case EcosystemPyPI:
		name, version, err = parsePyPISpec(p.Name)
	default:
		return fmt.Errorf("unknown ecosystem %q", p.Ecosystem)
	}
	if err != nil {
		return err
	}
	if version != "" {
		return fmt.Errorf("name %q carries a version: set Version", p.Name)
	}
	if p.Version != "" && !versionChars.MatchString(normVersion(p.Version)) {
		return fmt.Errorf("invalid version %q", p.Version)
	}
	if name == "" {
		return fmt.Errorf("empty name")
	}
	for _, b := range p.Bins {
		if b == "" || strings.ContainsAny(b, "/\x00 ") {
			return fmt.Errorf("invalid bin name %q", b)
		}
	}
	return nil
}

// defaultBin is the command a package provides under its own name.
func (p Package) defaultBin() string {
	if i := strings.LastIndexByte(p.Name, '/'); i >= 0 {
		return p.Name[i+1:]
	}
	return p.Name
}

var (
	npmName = regexp.MustCompile(`^(@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*$`)
	// versionChars admits semver ranges and dist-tags, and refuses what
	// would name another source (git URLs, files, tarballs, aliases).
	versionChars = regexp.MustCompile(`^[A-Za-z0-9.^~<>=*|!+, -]+$`)
	pypiName     = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?`)
	pypiExtras   = regexp.MustCompile(`^\[[A-Za-z0-9._, -]*\]`)
	pypiSep      = regexp.MustCompile(`[-_.]+`)
)

// parseNPMSpec splits "name@version" ("@scope/name@version").
func parseNPMSpec(s string) (name, version string, err error) {
	name = s
	at := strings.IndexByte(s, '@')
	if at == 0 {
		at = strings.IndexByte(s[1:], '@')
		if at >= 0 {
			at++
		}
	}
	if at >= 0 {
		name, version = s[:at], s[at+1:]
		if version == "" || !versionChars.MatchString(version) {
			return "", "", fmt.Errorf("%q is not a registry package with a version", s)
		}
	}
	if len(name) > 214 || !npmName.MatchString(name) {
		return "", "", fmt.Errorf("%q is not a registry package name", s)
	}
	return name, version, nil
}

// parsePyPISpec splits "name[extras]@version" or "name[extras]==version"
// (any PEP 440 comparison).
func parsePyPISpec(s string) (name, version string, err error) {
	name = pypiName.FindString(s)
	if name == "" {
		return "", "", fmt.Errorf("%q is not a registry package name", s)
	}
	rest := s[len(name):]
	rest = strings.TrimPrefix(rest, pypiExtras.FindString(rest))
	if rest == "" {
		return name, "", nil
	}
	if !strings.ContainsAny(rest[:1], "@=<>!~") || !versionChars.MatchString(normVersion(rest)) {
		return "", "", fmt.Errorf("%q is not a registry package with a version", s)
	}
	return name, normVersion(rest), nil
}

// normVersion makes "@1.2", "==1.2" and "1.2" compare equal.
func normVersion(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "===") {
		return v
	}
	v = strings.TrimPrefix(v, "@")
	return strings.TrimSpace(strings.TrimPrefix(v, "=="))
}

func normName(eco Ecosystem, name string) string {
	if eco == EcosystemPyPI {
		return strings.ToLower(pypiSep.ReplaceAllString(name, "-"))
	}
	return name
}

// executor describes a package executor's command line.
type executor struct {
	name  string
	eco   Ecosystem
	flags map[string]flagKind
	// refused explains why the invocation cannot be verified at all.
	refused string
}

type flagKind int

const (
	flagBool    flagKind = iota + 1
	flagValue            // takes a value that is not a package
	flagPackage          // names a package that provides the command
	flagWith             // names an extra package to install
	flagShell            // runs a shell command line
)

var (
	npmFlags = map[string]flagKind{
		"-y": flagBool, "--yes": flagBool, "--no": flagBool, "-q": flagBool, "--quiet": flagBool,
		"-s": flagBool, "--silent": flagBool, "--bun": flagBool, "--prefer-offline": flagBool,
		"--prefer-online": flagBool, "--offline": flagBool, "--ignore-existing": flagBool,
		"--no-install": flagBool, "--verbose": flagBool,
		"-p": flagPackage, "--package": flagPackage,
		"-c": flagShell, "--call": flagShell, "--shell-mode": flagShell,
	}
	uvxFlags = map[string]flagKind{
		"-q": flagBool, "--quiet": flagBool, "--isolated": flagBool, "--offline": flagBool,
		"--no-cache": flagBool, "-n": flagBool, "-v": flagBool, "--verbose": flagBool,
		"--python": flagValue,
		"--from":   flagPackage,
		"--with":   flagWith,
	}
	pipxFlags = map[string]flagKind{
		"-q": flagBool, "--quiet": flagBool, "-v": flagBool, "--verbose": flagBool, "--no-cache": flagBool,
		"--python": flagValue,
		"--spec":   flagPackage,
	}
)

// managerExec maps package managers to the subcommand that makes them
// package executors.
var managerExec = map[string]struct {
	words []string
	eco   Ecosystem
	flags map[string]flagKind
}{
	"npm":  {[]string{"exec", "x"}, EcosystemNPM, npmFlags},
	"pnpm": {[]string{"dlx"}, EcosystemNPM, npmFlags},
	"yarn": {[]string{"dlx"}, EcosystemNPM, npmFlags},
	"bun":  {[]string{"x"}, EcosystemNPM, npmFlags},
	"uv":   {[]string{"tool"}, EcosystemPyPI, uvxFlags},
	"pipx": {[]string{"run"}, EcosystemPyPI, pipxFlags},
}

func isExecutorName(base string) bool {
	switch base {
	case "npx", "pnpx", "bunx", "uvx":
		return true
	}
	return false
}

// executorCall recognises a package executor invocation and returns the
// arguments after the executor (and its subcommand).
func executorCall(base string, args []string) (executor, []string, bool) {
	switch base {
	case "npx", "pnpx", "bunx":
		return executor{name: base, eco: EcosystemNPM, flags: npmFlags}, args, true
	case "uvx":
		return executor{name: base, eco: EcosystemPyPI, flags: uvxFlags}, args, true
	}
	m, ok := managerExec[base]
	if !ok || len(args) == 0 {
		return executor{}, nil, false
	}
	ex := executor{name: base + " " + args[0], eco: m.eco, flags: m.flags}
	if slices.Contains(m.words, args[0]) {
		rest := args[1:]
		if base == "uv" { // uv tool run; other uv tool subcommands are not executors
			if len(rest) == 0 || rest[0] != "run" {
				return executor{}, nil, false
			}
			ex.name, rest = "uv tool run", rest[1:]
		}
		return ex, rest, true
	}
	if strings.HasPrefix(args[0], "-") {
		// Global options before the subcommand: too many forms to verify
		// ("npm --prefix d exec x"), so an executor hiding behind them is
		// refused outright.
		for i, a := range args {
			if a == "--" {
				break
			}
			if slices.Contains(m.words, a) && (base != "uv" || (i+1 < len(args) && args[i+1] == "run")) {
				ex.name = base + " " + a
				ex.refused = fmt.Sprintf("options before %q are not supported for %s", a, base)
				return ex, nil, true
			}
		}
	}
	return executor{}, nil, false
}

// checkExecutor verifies a package executor's arguments against the
// allowed packages.
func (c *compiled) checkExecutor(ex executor, args []string) *DeniedError {
	deny := func(rule, format string, a ...any) *DeniedError {
		return &DeniedError{Rule: rule, Reason: ex.name + ": " + fmt.Sprintf(format, a...)}
	}
	if ex.refused != "" {
		return deny(RulePackages, "%s", ex.refused)
	}
	var provides, with []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		kind := ex.flags[name]
		switch kind {
		case flagShell:
			return deny(RuleShell, "%s runs a shell command line, which would bypass the allowlist", name)
		case flagBool:
			if hasVal {
				return deny(RulePackages, "option %s takes no value", name)
			}
			continue
		case 0:
			return deny(RulePackages, "unknown option %s", name)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return deny(RulePackages, "option %s needs a value", name)
			}
			i++
			val = args[i]
		}
		switch kind {
		case flagPackage:
			provides = append(provides, val)
		case flagWith:
			with = append(with, val)
		}
	}
	if i >= len(args) {
		return deny(RulePackages, "no package to run")
	}
	target := args[i]
	for _, spec := range append(slices.Clone(provides), with...) {
		if _, err := c.allowedPackage(ex, spec); err != nil {
			return err
		}
	}
	if len(provides) == 0 {
		_, err := c.allowedPackage(ex, target)
		return err
	}
	// The packages named by options put their commands on PATH; the
	// command must be one of theirs, not any program of the system.
	for _, spec := range provides {
		pk, _ := c.allowedPackage(ex, spec)
		if target == pk.defaultBin() || slices.Contains(pk.Bins, target) ||
			(ex.eco == EcosystemPyPI && normName(ex.eco, target) == normName(ex.eco, pk.Name)) {
			return nil
		}
	}
	return deny(RulePackages, "%q is not a command of the allowed packages %s", target, strings.Join(provides, ", "))
}

// allowedPackage finds the Package entry allowing spec.
func (c *compiled) allowedPackage(ex executor, spec string) (Package, *DeniedError) {
	parse := parseNPMSpec
	if ex.eco == EcosystemPyPI {
		parse = parsePyPISpec
	}
	name, version, err := parse(spec)
	if err != nil {
		return Package{}, &DeniedError{Rule: RulePackages, Reason: ex.name + ": " + err.Error()}
	}
	var versions []string
	for _, pk := range c.packages[ex.eco] {
		if normName(ex.eco, pk.Name) != normName(ex.eco, name) {
			continue
		}
		if pk.Version == "" || normVersion(pk.Version) == normVersion(version) {
			return pk, nil
		}
		versions = append(versions, pk.Version)
	}
	if len(versions) > 0 {
		got := version
		if got == "" {
			got = "no version"
		}
		return Package{}, &DeniedError{Rule: RulePackages, Reason: fmt.Sprintf("%s: %s package %s: %q is not an allowed version (allowed: %s)",
			ex.name, ex.eco, name, got, strings.Join(versions, ", "))}
	}
	return Package{}, &DeniedError{Rule: RulePackages, Reason: fmt.Sprintf("%s: %s package %s is not in the allowed packages", ex.name, ex.eco, name)}
}
