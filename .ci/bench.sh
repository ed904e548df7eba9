#!/usr/bin/env bash
# The README's performance table, measured side by side in one run: the
# library, its bounds (gzip alone, a byte copy of the same HTTP body, io.Copy
# of the same download) and the official TypeScript SDK on the same paths,
# then the peak-memory tests. Not part of CI (about 15 minutes). Results go to
# bench-results/ (ignored by git); benchstat summarises them.
#
#   COUNT=6 bash .ci/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
count="${COUNT:-6}"
out=bench-results
mkdir -p "$out"
uptime | tee "$out/load.txt"

go test -run '^$' -benchmem -count "$count" -timeout 60m \
  -bench '^Benchmark(WriteFiles|WriteFilesGzipOnly)$/.*/(BestSpeed|NoCompression)$|^Benchmark(LogDecode|LogDecodeRaw|LogDecodeCopy|LogStream|LogStreamRaw|LogStreamCopy|RunTrue|RunTrueRaw|ReadFile|ReadFileCopy)$' \
  ./sandbox | tee "$out/go.txt"
go test -run '^$' -benchmem -count "$count" -bench '^BenchmarkExtract$' ./internal/tarx | tee "$out/extract.txt"

if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  (cd sandbox/sandboxtest/testdata/tssdk && npm ci --no-audit --no-fund --loglevel=error)
  : >"$out/tssdk.txt"
  for _ in $(seq "$count"); do
    SANDBOX_TSSDK_BENCH=1 go test -run '^TestOfficialTypeScriptSDKBenchmarks$' -count 1 -v ./sandbox \
      | grep '^BenchmarkTSSDK' | tee -a "$out/tssdk.txt"
  done
else
  echo "node/npm not installed: no TypeScript SDK figures"
fi

go test -run 'OneGiB|BoundedMemory' -count 1 -v ./sandbox ./files | grep -E 'peak heap|streamed|uploaded' | tee "$out/memory.txt"
uptime | tee -a "$out/load.txt"
for f in go extract tssdk; do
  [ -s "$out/$f.txt" ] && go run golang.org/x/perf/cmd/benchstat@latest "$out/$f.txt"
done | tee "$out/summary.txt"
