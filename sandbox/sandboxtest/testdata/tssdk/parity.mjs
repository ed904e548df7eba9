// Parity check: the official @vercel/sandbox SDK makes the filesystem,
// users and groups, drive and snapshot tree calls against the fake, and
// prints what it got as one JSON line ("RESULT {...}"). The Go test that
// starts it (TestOfficialSDKParity) makes the same calls with the Go
// client and compares the answers.
//
// Usage: SANDBOXTEST_URL=... SANDBOXTEST_TOKEN=... PARITY_SANDBOX=name
//        PARITY_SNAPSHOT=snap_... node parity.mjs

import { Sandbox, Snapshot, Drive, SandboxUserAlreadyExistsError } from "@vercel/sandbox";

const REAL_ORIGIN = "https://vercel.com";
const base = (process.env.SANDBOXTEST_URL ?? "").replace(/\/+$/, "");
const opts = {
  token: process.env.SANDBOXTEST_TOKEN || "conformance-token",
  teamId: "team_conformance",
  projectId: "prj_conformance",
  fetch: (input, init = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    return fetch(base + url.slice(REAL_ORIGIN.length), init);
  },
};

// code returns the error code a call fails with, or "ok".
async function code(fn) {
  try {
    await fn();
    return "ok";
  } catch (err) {
    if (err instanceof SandboxUserAlreadyExistsError) return "user-exists";
    return err.code ?? err.name ?? String(err);
  }
}

async function main() {
  const sandbox = await Sandbox.get({ ...opts, name: process.env.PARITY_SANDBOX });
  const fs = sandbox.fs;
  const out = {};

  const st = await fs.stat("ts/a.txt");
  out.stat = { size: st.size, isFile: st.isFile(), isDir: st.isDirectory(), perm: st.mode & 0o7777, uid: st.uid, gid: st.gid, mtimeSec: Math.floor(st.mtimeMs / 1000) };
  const dir = await fs.readdir("ts", { withFileTypes: true });
  out.readdir = dir.map((d) => ({ name: d.name, isDir: d.isDirectory(), isFile: d.isFile(), isLink: d.isSymbolicLink() })).sort((a, b) => (a.name < b.name ? -1 : 1));
  out.exists = [await fs.exists("ts/a.txt"), await fs.exists("ts/missing")];
  out.statMissing = await code(() => fs.stat("ts/missing"));
  out.rmMissing = await code(() => fs.rm("ts/missing"));
  out.rename = await code(() => fs.rename("ts/a.txt", "ts/renamed.txt"));
  out.afterRename = [await fs.exists("ts/a.txt"), await fs.exists("ts/renamed.txt")];
  out.rm = await code(() => fs.rm("ts/sub", { recursive: true }));
  out.afterRm = await fs.exists("ts/sub");

  const user = await sandbox.createUser("tsuser");
  out.user = { name: user.username, home: user.homeDir };
  out.userAgain = await code(() => sandbox.createUser("tsuser"));
  const who = await sandbox.asUser("tsuser").runCommand("whoami");
  out.whoami = await who.stdout();
  out.group = await sandbox.createGroup("tsgroup");

  const drive = await Drive.getOrCreate({ ...opts, name: "parity-ts", maxSize: 1 << 30 });
  out.drive = { id: drive.driveId, name: drive.name, region: drive.region, maxSize: drive.maxSize, created: drive.createdAt.getTime() };
  const listed = [];
  for await (const d of await Drive.list({ ...opts, limit: 1 })) listed.push(d.name);
  out.drives = listed.sort();
  await drive.delete();
  out.driveAfterDelete = await code(() => Drive.list({ ...opts }).then((p) => { if (p.drives.some((d) => d.name === "parity-ts")) throw new Error("still listed"); }));

  const tree = await Snapshot.tree({ ...opts, snapshotId: process.env.PARITY_SNAPSHOT });
  out.tree = {
    anchor: tree.anchor?.snapshot.id,
    lineage: tree.snapshots.map((n) => ({ id: n.snapshot.id, status: n.snapshot.status, siblings: n.siblings.length, count: Number(n.count) })),
  };

  console.log("RESULT " + JSON.stringify(out));
}

main().catch((err) => {
  console.error("FAIL", err);
  process.exitCode = 1;
});
