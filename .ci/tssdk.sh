#!/usr/bin/env bash
# Conformance of the local API (sandbox/local) with the official TypeScript SDK:
# installs the pinned @vercel/sandbox from the committed lock file and runs
# TestOfficialTypeScriptSDK, which drives the SDK through the fake,
# TestOfficialSDKParity, which compares its answers with the Go client's, then
# records the same run to a cassette and replays it with no fake present,
# and runs TestOfficialSDKLoad (200 sandboxes at once, every byte counted).
# Needs node (20 or newer) and npm with access to the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
dir=sandbox/sandboxtest/testdata/tssdk

echo "== node $(node --version), npm $(npm --version)"
echo "== npm ci ($dir)"
if ! log=$(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error 2>&1); then
  echo "$log"
  exit 1
fi

echo "== go test: official TypeScript SDK against the fake"
SANDBOXTEST_TSSDK=1 go test ./sandbox/sandboxtest -run '^TestOfficialTypeScriptSDK$' -count=1 -v

echo "== go test: the official TypeScript SDK and the Go client get the same answers (filesystem, users, drives, snapshot tree)"
SANDBOXTEST_TSSDK=1 go test ./sandbox/sandboxtest -run '^TestOfficialSDKParity$' -count=1 -v

echo "== go test: official TypeScript SDK recorded to a cassette, then replayed from it"
SANDBOXTEST_TSSDK=1 go test ./sandbox/sandboxtest/cassette -run '^TestOfficialTypeScriptSDK$' -count=1 -v

echo "== go test: the official TypeScript SDK, 200 sandboxes at once, every byte of their output back"
SANDBOXTEST_TSSDK=1 go test ./sandbox/sandboxtest -run '^TestOfficialSDKLoad$' -count=1 -v
