#!/usr/bin/env bash
# The official Vercel Sandbox CLI (npm sandbox, pinned with its lock file in
# sandbox/sandboxtest/cmd/sandboxtest-server/testdata/cli) against
# sandboxtest-server: TestOfficialCLI drives create, exec, cp, config, run
# --rm, snapshot, snapshots, fork, sessions, connect, exec -i and sh on a
# pseudo-terminal (typed input, Ctrl-C, a resize, exit codes), drives, stop
# and remove, asserting what each did, and that no sandbox is left running.
# The CLI is installed once, with npm ci from the lock file (npm keeps its
# cache); a later run that finds the pinned version installed skips npm.
# Needs node (20 or newer) and npm with access to the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
dir=sandbox/sandboxtest/cmd/sandboxtest-server/testdata/cli
pinned=$(node -p 'require("./'"$dir"'/package.json").dependencies.sandbox')
installed=$(node -p 'try { require("./'"$dir"'/node_modules/sandbox/package.json").version } catch { "" }')

echo "== node $(node --version), npm $(npm --version)"
if [ "$installed" = "$pinned" ]; then
  echo "== sandbox $pinned already installed in $dir"
else
  echo "== npm ci ($dir)"
  if ! log=$(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error 2>&1); then
    echo "$log"
    exit 1
  fi
fi

echo "== go test: the official CLI (sandbox $pinned) against sandboxtest-server"
SANDBOXTEST_CLI="$PWD/$dir/node_modules/.bin/sandbox" \
  go test ./sandbox/sandboxtest/cmd/sandboxtest-server -run '^TestOfficialCLI$' -count=1 -parallel 5 -v
