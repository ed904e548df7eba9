// Load check: the official @vercel/sandbox SDK runs LOAD_SANDBOXES sandboxes
// at once (default 200) against the local API, each running two attached
// commands of known output at the same time as all the others: an echo of
// a line naming the sandbox, and seq 1 5000. It counts every byte that
// comes back, LOAD_ROUNDS times (default 1), and exits non-zero when a
// command came back with other output or another exit code.
//
// Usage: SANDBOXTEST_URL=http://127.0.0.1:PORT SANDBOXTEST_TOKEN=TOKEN node load.mjs
// (TestOfficialSDKLoad in ../../tssdk_test.go starts the server and runs it).

import { Sandbox } from "@vercel/sandbox";

const REAL_ORIGIN = "https://vercel.com";
const base = (process.env.SANDBOXTEST_URL ?? "").replace(/\/+$/, "");
if (!/^https?:\/\/[^/]+$/.test(base)) {
  console.error("FAIL setup: SANDBOXTEST_URL must be the server's base URL, e.g. http://127.0.0.1:8080");
  process.exit(2);
}
const sandboxes = Number(process.env.LOAD_SANDBOXES ?? 200);
const rounds = Number(process.env.LOAD_ROUNDS ?? 1);
const seqLast = 5000;

const opts = {
  token: process.env.SANDBOXTEST_TOKEN || "conformance-token",
  teamId: "team_conformance",
  projectId: "prj_conformance",
  fetch: (input, init = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    return fetch(base + url.slice(REAL_ORIGIN.length), init);
  },
};

let seqText = "";
for (let i = 1; i <= seqLast; i++) seqText += `${i}\n`;

let failed = 0;
for (let round = 1; round <= rounds; round++) {
  let want = 0;
  let got = 0;
  let lost = 0;
  const check = async (what, done, expect) => {
    const out = await done.stdout();
    want += Buffer.byteLength(expect);
    got += Buffer.byteLength(out);
    if (done.exitCode !== 0 || out !== expect) {
      lost++;
      console.log(`LOST ${what}: exit ${done.exitCode}, ${Buffer.byteLength(out)} bytes of stdout (want ${Buffer.byteLength(expect)}), starts ${JSON.stringify(out.slice(0, 40))}`);
    }
  };
  const start = Date.now();
  await Promise.all(
    Array.from({ length: sandboxes }, async (_, i) => {
      const sandbox = await Sandbox.create({ ...opts, ports: [] });
      const line = `sandbox ${i} of ${sandboxes} says hello`;
      await Promise.all([
        sandbox.runCommand("echo", [line]).then((d) => check(`sandbox ${i}: echo`, d, line + "\n")),
        sandbox.runCommand("seq", ["1", String(seqLast)]).then((d) => check(`sandbox ${i}: seq`, d, seqText)),
      ]);
    }),
  );
  console.log(`round ${round}: ${sandboxes} sandboxes, ${2 * sandboxes} commands: ${got} of ${want} bytes came back, ${lost} commands lost output, in ${Date.now() - start} ms`);
  if (lost > 0 || got !== want) failed++;
}
if (failed > 0) {
  console.log(`FAIL ${failed} of ${rounds} rounds lost output`);
  process.exit(1);
}
console.log(`PASS ${rounds} rounds`);
