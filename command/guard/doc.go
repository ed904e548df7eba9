// Package guard runs the lint, type-check and test commands of a
// repository in a sandbox under a strict, default-deny policy.
//
// A Policy says which commands may run (Allow rules matched on the
// executable name and its arguments, plus Packages that package executors
// such as npx, bunx, pnpm dlx, yarn dlx, uvx and pipx run may fetch), which
// directory they are confined to (Workspace), and which values must never
// appear in what they print (Secrets). Policy.Check judges a command without
// running it; a Gate judges and runs it in a sandbox, redacts its output
// as it streams, and keeps a bounded Transcript of everything it ran or
// refused.
//
// A refused command never reaches the sandbox: Check and Gate.Run return
// a *DeniedError naming the rule that refused it (errors.Is(err, ErrDenied)).
//
// # What is checked
//
//   - Commands: nothing runs unless a Rule allows its executable and
//     arguments. Shells (sh, bash, zsh, ...) are refused unless a Rule names
//     the shell, because "sh -c" would bypass every other rule. An
//     executable given by path must be named by a Rule exactly.
//   - Package executors: "npx pkg", "npm exec", "pnpm dlx", "yarn dlx",
//     "bunx", "bun x", "uvx", "uv tool run" and "pipx run" may only fetch
//     packages listed in Policy.Packages, whatever the Allow rules say.
//     Version suffixes (eslint@9), scoped names (@scope/pkg) and the
//     options that name packages (npx -p pkg cmd, uvx --from pkg cmd,
//     uvx --with pkg) are understood; unknown options, shell modes (npx -c)
//     and non-registry sources (git URLs, file paths, aliases) are refused.
//   - Workspace confinement: the working directory and every argument that
//     names a path (whole arguments, values after "=", glued short options
//     such as -I/usr/include, colon- and comma-separated lists, file://
//     URLs, ~ home paths) must stay inside the workspace or Policy.AllowPaths
//     after lexical cleaning. The check is lexical: symbolic links inside
//     the workspace are not resolved (the sandbox itself is the isolation
//     boundary).
//   - Sudo and per-command environment variables are refused unless the
//     policy allows them, since variables such as LD_PRELOAD, NODE_OPTIONS
//     or GOFLAGS can run arbitrary code.
//
// A rule that allows a command which itself runs other commands (make,
// npm run, go test, uv run, env, xargs) allows whatever those run: the
// policy limits which tools are started, and the sandbox isolates what the
// repository's own code does.
//
// # Redaction
//
// A Redactor replaces known secrets and token-shaped strings (Vercel
// tokens, JWTs, GitHub, npm, Slack, Stripe and AWS keys, sk- API keys,
// Bearer credentials) with "[REDACTED]", in strings and in streams: its
// Writer holds back only what could still turn out to be a secret split
// across writes, and flushes the rest at Close.
package guard
