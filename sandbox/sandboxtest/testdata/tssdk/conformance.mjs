// Conformance check: drives the official @vercel/sandbox SDK against the
// sandboxtest fake and asserts that every step of the basic flow works.
//
// Usage: SANDBOXTEST_URL=http://127.0.0.1:PORT node conformance.mjs
//
// The SDK always talks to https://vercel.com/api; a custom fetch rewrites
// those URLs to the fake (keeping the /api prefix, which the fake accepts).
// Prints one line per step and exits non-zero on the first failure.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { Sandbox, Snapshot, APIError } from "@vercel/sandbox";

const require = createRequire(import.meta.url);
const SDK_VERSION = require("@vercel/sandbox/package.json").version;

const REAL_ORIGIN = "https://vercel.com";
const REAL_API = `${REAL_ORIGIN}/api/`;
const OVERALL_TIMEOUT_MS = Number(process.env.SANDBOXTEST_TSSDK_TIMEOUT_MS ?? 90_000);

const base = (process.env.SANDBOXTEST_URL ?? "").replace(/\/+$/, "");
if (!/^https?:\/\/[^/]+$/.test(base)) {
  console.error("FAIL setup: SANDBOXTEST_URL must be the fake's base URL, e.g. http://127.0.0.1:8080");
  process.exit(2);
}

// Non-JWT token (not three dot-separated parts), so the SDK never tries an
// OIDC refresh; team and project are passed explicitly alongside it.
const credentials = {
  token: process.env.SANDBOXTEST_TOKEN || "conformance-token",
  teamId: "team_conformance",
  projectId: "prj_conformance",
};

// Every URL the SDK requested, as "METHOD path" (for the summary line).
const seen = [];

async function fakeFetch(input, init = {}) {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (!url.startsWith(REAL_API)) {
    throw new Error(`SDK requested an unexpected URL: ${url}`);
  }
  const target = base + url.slice(REAL_ORIGIN.length);
  seen.push(`${init.method ?? "GET"} ${new URL(target).pathname}`);
  return fetch(target, init);
}

const opts = { ...credentials, fetch: fakeFetch };

const watchdog = setTimeout(() => {
  console.error(`FAIL timeout: the flow did not finish within ${OVERALL_TIMEOUT_MS} ms`);
  process.exit(3);
}, OVERALL_TIMEOUT_MS);
watchdog.unref();

let stepNo = 0;
async function step(name, fn) {
  stepNo++;
  const start = Date.now();
  try {
    const detail = await fn();
    const ms = Date.now() - start;
    console.log(`ok   ${String(stepNo).padStart(2)} ${name}${detail ? ` — ${detail}` : ""} (${ms} ms)`);
  } catch (err) {
    console.log(`FAIL ${String(stepNo).padStart(2)} ${name}: ${describe(err)}`);
    if (err?.stack) console.error(err.stack);
    process.exitCode = 1;
    throw err;
  }
}

function describe(err) {
  if (err instanceof APIError) {
    const status = err.response?.status;
    const body = err.json !== undefined ? JSON.stringify(err.json) : err.text;
    return `${err.message} (status ${status}${body ? `, body ${body}` : ""})`;
  }
  return err?.message ?? String(err);
}

function isAbsolute(p) {
  return typeof p === "string" && p.startsWith("/");
}

async function streamToString(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8");
}

const name = `conformance-${process.pid}-${Date.now().toString(36)}`;
const helloText = "hello from the TypeScript SDK\n";
const dataBytes = Buffer.from([0x00, 0x01, 0x02, 0xfe, 0xff, 0x0a, 0x41]);

let sandbox;
let firstSessionId;
let autoSnapshotId;

async function main() {
  console.log(`@vercel/sandbox ${SDK_VERSION} against ${base}`);

  await step("Sandbox.create", async () => {
    sandbox = await Sandbox.create({ ...opts, name, ports: [] });
    assert.equal(sandbox.name, name);
    assert.equal(sandbox.status, "running");
    assert.deepEqual(sandbox.routes, []);
    const session = sandbox.currentSession();
    firstSessionId = session.sessionId;
    assert.match(firstSessionId, /^sbx_/);
    assert.equal(session.status, "running");
    assert.ok(isAbsolute(session.cwd), `session cwd must be absolute, got ${session.cwd}`);
    return `name=${sandbox.name} session=${firstSessionId}`;
  });

  await step("writeFiles (two files, one in a subdirectory)", async () => {
    await sandbox.writeFiles([
      { path: "hello.txt", content: helloText },
      { path: "sub/dir/data.bin", content: dataBytes, mode: 0o600 },
    ]);
  });

  await step("runCommand attached (cat)", async () => {
    const done = await sandbox.runCommand("cat", ["hello.txt"]);
    assert.equal(done.exitCode, 0);
    assert.match(done.cmdId, /^cmd_/);
    assert.equal(await done.stdout(), helloText);
    assert.equal(await done.stderr(), "");
    return `exit=${done.exitCode} stdout=${JSON.stringify(await done.stdout())}`;
  });

  await step("runCommand detached + logs() + wait() + stdout()/stderr()", async () => {
    const cmd = await sandbox.runCommand({
      cmd: "sh",
      args: ["-c", "echo a; sleep 0.2; echo b >&2; exit 3"],
      detached: true,
    });
    assert.match(cmd.cmdId, /^cmd_/);
    assert.equal(cmd.exitCode, null, "a detached command starts without an exit code");
    const lines = [];
    for await (const line of cmd.logs()) lines.push(line);
    const joined = (s) => lines.filter((l) => l.stream === s).map((l) => l.data).join("");
    assert.equal(joined("stdout"), "a\n");
    assert.equal(joined("stderr"), "b\n");
    const finished = await cmd.wait();
    assert.equal(finished.exitCode, 3);
    assert.equal(await finished.stdout(), "a\n");
    assert.equal(await finished.stderr(), "b\n");
    assert.equal(await cmd.output("both"), "a\nb\n");
    return `${lines.length} log lines, exit=${finished.exitCode}`;
  });

  await step("runCommand detached + kill()", async () => {
    const cmd = await sandbox.runCommand({ cmd: "sleep", args: ["30"], detached: true });
    assert.equal(cmd.exitCode, null);
    await cmd.kill("SIGTERM");
    const finished = await cmd.wait();
    assert.equal(typeof finished.exitCode, "number");
    assert.notEqual(finished.exitCode, 0, "a killed command must not report success");
    return `exit=${finished.exitCode}`;
  });

  await step("readFile / readFileToBuffer / missing file", async () => {
    const stream = await sandbox.readFile({ path: "hello.txt" });
    assert.ok(stream, "readFile returned null for an existing file");
    assert.equal(await streamToString(stream), helloText);
    const buf = await sandbox.readFileToBuffer({ path: "sub/dir/data.bin" });
    assert.ok(buf, "readFileToBuffer returned null for an existing file");
    assert.deepEqual(Buffer.from(buf), dataBytes);
    const viaCwd = await sandbox.readFileToBuffer({ path: "data.bin", cwd: `${sandbox.cwd}/sub/dir` });
    assert.deepEqual(Buffer.from(viaCwd), dataBytes);
    assert.equal(await sandbox.readFile({ path: "no/such/file.txt" }), null);
    assert.equal(await sandbox.readFileToBuffer({ path: "no-such-file.txt" }), null);
  });

  await step("mkDir", async () => {
    await sandbox.mkDir("made-by-sdk");
    const check = await sandbox.runCommand("sh", ["-c", "test -d made-by-sdk && stat -c %a sub/dir/data.bin"]);
    assert.equal(check.exitCode, 0, `made-by-sdk is not a directory: ${await check.stderr()}`);
    assert.equal((await check.stdout()).trim(), "600", "writeFiles did not apply the file mode");
  });

  await step("extendTimeout", async () => {
    const before = sandbox.currentSession().timeout;
    await sandbox.extendTimeout(60_000);
    const after = sandbox.currentSession().timeout;
    assert.equal(after, before + 60_000);
    return `timeout ${before} -> ${after} ms`;
  });

  await step("stop", async () => {
    const stopped = await sandbox.stop();
    assert.equal(stopped.status, "stopped");
    assert.equal(stopped.id, firstSessionId);
    assert.equal(typeof stopped.stoppedAt, "number");
    assert.equal(sandbox.status, "stopped");
    autoSnapshotId = stopped.snapshot?.id;
    return autoSnapshotId ? `auto snapshot ${autoSnapshotId}` : "no snapshot";
  });

  let resumed;
  await step("Sandbox.get + runCommand (auto-resume)", async () => {
    resumed = await Sandbox.get({ ...opts, name });
    assert.equal(resumed.name, name);
    assert.equal(resumed.currentSession().sessionId, firstSessionId);
    assert.equal(resumed.status, "stopped");
    const done = await resumed.runCommand("cat", ["hello.txt"]);
    assert.equal(done.exitCode, 0);
    assert.equal(await done.stdout(), helloText, "file content did not survive stop/resume");
    const newSessionId = resumed.currentSession().sessionId;
    assert.match(newSessionId, /^sbx_/);
    assert.notEqual(newSessionId, firstSessionId, "resume must start a new session");
    assert.equal(resumed.currentSession().status, "running");
    sandbox = resumed;
    return `session ${firstSessionId} -> ${newSessionId}`;
  });

  await step("listSessions", async () => {
    const page = await sandbox.listSessions();
    assert.equal(page.pagination.next, null);
    const ids = page.sessions.map((s) => s.id);
    assert.ok(ids.includes(firstSessionId), `first session missing from ${ids}`);
    assert.ok(ids.includes(sandbox.currentSession().sessionId), `current session missing from ${ids}`);
    return `${ids.length} sessions`;
  });

  await step("snapshot + Snapshot.get + Snapshot.list + delete", async () => {
    const snap = await sandbox.snapshot({ expiration: 0 });
    assert.match(snap.snapshotId, /^snap_/);
    assert.equal(snap.status, "created");
    assert.equal(snap.expiresAt, undefined, "expiration 0 means the snapshot never expires");
    assert.equal(sandbox.currentSession().status, "stopped", "snapshot stops the session");
    const got = await Snapshot.get({ ...opts, snapshotId: snap.snapshotId });
    assert.equal(got.snapshotId, snap.snapshotId);
    const page = await Snapshot.list({ ...opts, name });
    assert.equal(page.pagination.next, null);
    assert.ok(page.snapshots.some((s) => s.id === snap.snapshotId), "new snapshot missing from Snapshot.list");
    const own = await sandbox.listSnapshots();
    assert.ok(own.snapshots.some((s) => s.id === snap.snapshotId), "new snapshot missing from listSnapshots");
    // The sandbox resumes from the snapshot on the next call.
    const again = await sandbox.runCommand("cat", ["hello.txt"]);
    assert.equal(await again.stdout(), helloText, "file content did not survive snapshot/resume");
    // Delete an older snapshot that the sandbox no longer resumes from.
    let deleted = "none";
    if (autoSnapshotId && autoSnapshotId !== snap.snapshotId) {
      const old = await Snapshot.get({ ...opts, snapshotId: autoSnapshotId });
      await old.delete();
      assert.equal(old.status, "deleted");
      deleted = autoSnapshotId;
    }
    return `snapshot ${snap.snapshotId}, ${page.snapshots.length} listed, deleted ${deleted}`;
  });

  await step("Sandbox.list (single page)", async () => {
    const page = await Sandbox.list({ ...opts });
    assert.equal(page.pagination.next, null);
    const mine = page.sandboxes.find((s) => s.name === name);
    assert.ok(mine, `sandbox ${name} missing from the list`);
    assert.equal(mine.status, "running");
    const all = [];
    for await (const s of page) all.push(s.name);
    assert.ok(all.includes(name));
    return `${page.sandboxes.length} sandboxes`;
  });

  await step("delete", async () => {
    await sandbox.delete();
    await assert.rejects(
      Sandbox.get({ ...opts, name }),
      (err) => err instanceof APIError && err.response?.status === 404,
      "Sandbox.get after delete must answer 404",
    );
  });

  await step("Sandbox.getOrCreate (404 -> create) + delete", async () => {
    let created = false;
    const again = await Sandbox.getOrCreate({
      ...opts,
      name,
      ports: [],
      onCreate: async () => {
        created = true;
      },
    });
    assert.ok(created, "getOrCreate must create a sandbox whose name is unknown");
    assert.equal(again.name, name);
    assert.notEqual(again.currentSession().sessionId, sandbox.currentSession().sessionId);
    const done = await again.runCommand("sh", ["-c", "test -e hello.txt || echo empty"]);
    assert.equal(await done.stdout(), "empty\n", "a recreated sandbox must start empty");
    await again.delete();
  });

  console.log(`PASS ${stepNo} steps, ${seen.length} requests`);
}

main().catch(() => {
  process.exitCode = 1;
});
