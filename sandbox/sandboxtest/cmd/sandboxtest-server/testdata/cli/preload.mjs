// Preload for the official Vercel Sandbox CLI (npm sandbox), so that it
// talks to a local sandboxtest-server instead of Vercel:
//
//	SANDBOXTEST_URL=http://127.0.0.1:PORT NODE_OPTIONS="--import /abs/path/preload.mjs" sandbox list
//
// The CLI has no setting for its base URL: the SDK it is built on always
// calls https://vercel.com/api, and before a terminal the CLI probes
// https://HOST/health on the host of the terminal's URL (port 443, whatever
// the URL's port). This module replaces the global fetch, which both use:
//   - https://vercel.com/api/… goes to SANDBOXTEST_URL/api/…;
//   - https://HOST/health, for the server's own host, goes to
//     SANDBOXTEST_URL/health;
//   - anything else fails as an unreachable network would (the CLI's
//     version check against the npm registry, for one), so the run never
//     leaves the machine.
// The terminal's WebSocket needs nothing: the server hands out a ws:// URL.

const raw = process.env.SANDBOXTEST_URL ?? "";
if (!/^https?:\/\/[^/]+\/?$/.test(raw)) {
  throw new Error(`preload.mjs: SANDBOXTEST_URL must be the server's base URL, such as http://127.0.0.1:8080, not ${JSON.stringify(raw)}`);
}
const server = new URL(raw);
const realFetch = globalThis.fetch;

globalThis.fetch = function localFetch(input, init) {
  const request = typeof input === "string" || input instanceof URL ? null : input;
  const url = new URL(request ? request.url : String(input));
  let target;
  if (url.origin === "https://vercel.com" && url.pathname.startsWith("/api/")) {
    target = new URL(url.pathname + url.search, server);
  } else if (url.protocol === "https:" && url.hostname === server.hostname && url.pathname === "/health") {
    target = new URL("/health", server);
  } else {
    return Promise.reject(new TypeError(`fetch failed: this run reaches only ${server.origin}, not ${url.origin}`));
  }
  return realFetch(request ? new Request(target, request) : target, init);
};
