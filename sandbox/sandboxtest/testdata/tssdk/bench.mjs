// Benchmarks of the official @vercel/sandbox SDK against the local API, on
// the same paths and data as the Go client's benchmarks in ./sandbox, so
// that both can be read side by side. Run it through
//
//	SANDBOX_TSSDK_BENCH=1 go test ./sandbox -run '^TestOfficialTypeScriptSDKBenchmarks$' -v
//
// which starts the server (with the scripted "lines" and "true" commands of
// the Go benchmarks), writes the upload data and sets:
//
//	SANDBOXTEST_URL, SANDBOXTEST_TOKEN  the server and its token
//	BENCH_TEXT, BENCH_RANDOM            files of 64 MiB of text and random data
//	BENCH_LINES                         lines of the log stream benchmark
//	BENCH_TIME_MS                       least time per benchmark (default 2000)
//
// It prints one line per benchmark in the format of `go test -bench`, so
// benchstat reads them beside the Go results.

import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { Sandbox } from "@vercel/sandbox";

const base = (process.env.SANDBOXTEST_URL ?? "").replace(/\/+$/, "");
const REAL_ORIGIN = "https://vercel.com";
const minTimeMs = Number(process.env.BENCH_TIME_MS ?? 2000);
const lines = Number(process.env.BENCH_LINES ?? 100_000);
const lineBytes = "the quick brown fox jumps over the lazy dog 0123456789\n".length;

// Uploads timed by the benchmarks carry a header that makes the server
// discard the archive unread into the disk, as the Go benchmark's server
// does; the setup upload of the download benchmark does not.
let discardUploads = false;

async function benchFetch(input, init = {}) {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  const target = base + url.slice(REAL_ORIGIN.length);
  if (discardUploads && target.includes("/fs/write")) {
    init = { ...init, headers: { ...Object.fromEntries(new Headers(init.headers ?? {})), "x-bench-discard": "1" } };
  }
  return fetch(target, init);
}

const opts = {
  token: process.env.SANDBOXTEST_TOKEN,
  teamId: "team_conformance",
  projectId: "prj_conformance",
  fetch: benchFetch,
};

const discard = () => new Writable({ write(_chunk, _enc, cb) { cb(); } });

// bench runs fn until minTimeMs has passed (at least twice, after one
// unmeasured run) and prints the result as `go test -bench` would. bytes
// is the payload of one run, for MB/s; extra adds metrics per second.
async function bench(name, bytes, fn, extra = {}) {
  await fn();
  let n = 0;
  let peakRSS = process.memoryUsage().rss;
  const start = process.hrtime.bigint();
  let elapsed = 0n;
  while (n < 2 || elapsed < BigInt(minTimeMs) * 1_000_000n) {
    await fn();
    n++;
    peakRSS = Math.max(peakRSS, process.memoryUsage().rss);
    elapsed = process.hrtime.bigint() - start;
  }
  const nsPerOp = Number(elapsed) / n;
  const fields = [`BenchmarkTSSDK/${name}`, String(n), `${nsPerOp.toFixed(0)} ns/op`];
  if (bytes > 0) fields.push(`${(bytes / (nsPerOp / 1e3)).toFixed(2)} MB/s`);
  for (const [unit, perOp] of Object.entries(extra)) fields.push(`${(perOp / (nsPerOp / 1e9)).toFixed(0)} ${unit}`);
  fields.push(`${(peakRSS / (1 << 20)).toFixed(1)} peak-rss-MiB`);
  console.log(fields.join("\t"));
}

async function main() {
  const sandbox = await Sandbox.create({ ...opts, ports: [] });
  try {
    const text = readFileSync(process.env.BENCH_TEXT);
    const random = readFileSync(process.env.BENCH_RANDOM);

    await bench("RunTrue", 0, async () => {
      const done = await sandbox.runCommand("true");
      if (done.exitCode !== 0) throw new Error(`exit ${done.exitCode}`);
    });

    await bench("LogStream", lines * lineBytes, async () => {
      const done = await sandbox.runCommand({ cmd: "lines", args: [String(lines)], stdout: discard() });
      if (done.exitCode !== 0) throw new Error(`exit ${done.exitCode}`);
    }, { "lines/s": lines });

    discardUploads = true;
    for (const [name, data] of [["text", text], ["random", random]]) {
      await bench(`WriteFiles/${name}`, data.length, async () => {
        await sandbox.writeFiles([{ path: "big.bin", content: data }]);
      });
    }
    discardUploads = false;

    await sandbox.writeFiles([{ path: "big.bin", content: random }]);
    await bench("ReadFile", random.length, async () => {
      const stream = await sandbox.readFile({ path: "big.bin" });
      let n = 0;
      for await (const chunk of stream) n += chunk.length;
      if (n !== random.length) throw new Error(`read ${n} bytes`);
    });
  } finally {
    await sandbox.stop();
  }
}

main().catch((err) => {
  console.error(err?.stack ?? String(err));
  process.exit(1);
});
