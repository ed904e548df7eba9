#!/usr/bin/env bash
# The performance table of docs/performance.md, measured side by side in one run: the
# library, its bounds (gzip alone, a byte copy of the same HTTP body, io.Copy
# of the same download) and the official TypeScript SDK on the same paths,
# then the peak-memory tests. Each of COUNT rounds runs every benchmark once,
# so that the figures of a row share the same moments of the machine. Not
# part of CI (about 3 minutes a round). Results go to bench-results/
# (ignored by git); benchstat summarises them.
#
#   COUNT=6 bash .ci/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
count="${COUNT:-6}"
out=bench-results
mkdir -p "$out"
uptime | tee "$out/load.txt"

tssdk=0
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  (cd sandbox/sandboxtest/testdata/tssdk && npm ci --no-audit --no-fund --loglevel=error)
  tssdk=1
else
  echo "node/npm not installed: no TypeScript SDK figures"
fi

go test -c -o "$out/sandbox.test" ./sandbox
go test -c -o "$out/tarx.test" ./internal/tarx
: >"$out/go.txt"
: >"$out/tssdk.txt"
for round in $(seq "$count"); do
  echo "== round $round of $count"
  (cd sandbox && "../$out/sandbox.test" -test.run '^$' -test.benchmem -test.timeout 60m \
    -test.bench '^Benchmark(WriteFiles|WriteFilesGzipOnly)$/.*/(BestSpeed|NoCompression)$|^Benchmark(LogDecode|LogDecodeRaw|LogDecodeCopy|LogStream|LogStreamRaw|LogStreamCopy|ReadFile|ReadFileCopy)$') \
    | tee -a "$out/go.txt"
  # The per-call pair, each in a process of its own and in turn first: of
  # two runs in a row, the first was a little slower in alternating runs.
  pair="RunTrue RunTrueRaw"
  [ $((round % 2)) = 0 ] && pair="RunTrueRaw RunTrue"
  for b in $pair; do
    (cd sandbox && "../$out/sandbox.test" -test.run '^$' -test.benchmem -test.benchtime 5000x -test.bench "^Benchmark$b\$") \
      | grep '^Benchmark' | tee -a "$out/go.txt"
  done
  (cd internal/tarx && "../../$out/tarx.test" -test.run '^$' -test.benchmem -test.bench '^BenchmarkExtract$') \
    | grep '^Benchmark' | tee -a "$out/go.txt"
  if [ "$tssdk" = 1 ]; then
    (cd sandbox && SANDBOX_TSSDK_BENCH=1 "../$out/sandbox.test" -test.run '^TestOfficialTypeScriptSDKBenchmarks$' -test.v) \
      | grep '^BenchmarkTSSDK' | tee -a "$out/tssdk.txt"
  fi
done

go test -run 'OneGiB|BoundedMemory' -count 1 -v ./sandbox ./files | grep -E 'peak heap|streamed|uploaded' | tee "$out/memory.txt"
uptime | tee -a "$out/load.txt"
for f in go tssdk; do
  if [ -s "$out/$f.txt" ]; then go run golang.org/x/perf/cmd/benchstat@latest "$out/$f.txt"; fi
done | tee "$out/summary.txt"
