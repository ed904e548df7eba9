// Package proxy authenticates the requests that a sandbox's network policy
// forwards to a URL of yours.
//
// A network-policy rule with a forwardURL sends a sandbox's matching
// outgoing requests to that URL instead of their destination. Vercel adds
// five headers to each: vercel-forwarded-scheme, vercel-forwarded-host,
// vercel-forwarded-port and vercel-forwarded-path name the destination, and
// vercel-sandbox-oidc-token carries an OIDC token that says which sandbox
// sent it. A backend that checks the token can add a credential the sandbox
// never holds and send the request on: credential brokering.
//
// [Verifier.Handler] wraps your handler: it checks every request as the
// official TypeScript SDK's defineSandboxProxy (@vercel/sandbox/proxy) does,
// removes the five headers, and hands your handler a [Forwarded] through the
// request context ([FromContext]). A request that fails any check goes to the
// invalid-request handler instead, 403 Forbidden by default, with an error
// that matches one of the Err values below and never contains the token.
//
// # What is checked
//
//   - The five headers are all present and not empty, and the first four
//     form an http or https URL: the destination, [Forwarded.URL].
//   - The token is a compact JWS signed with RS256 (no other algorithm).
//   - Its issuer is, exactly, one the verifier trusts: Vercel's global
//     issuer https://oidc.vercel.com, or those you named with
//     [WithTrustedIssuer] instead. A project whose OIDC issuer mode is
//     Team sends tokens of https://oidc.vercel.com/<team slug>: name it.
//   - The signing key is in the issuer's JSON Web Key Set, fetched from
//     <issuer>/.well-known/jwks.
//   - Its audience is the forward URL: the URL of the request as this server
//     received it, less the forwarded path at its end, without trailing
//     slashes. The scheme and host come from the request (r.TLS and r.Host)
//     unless [WithOrigin] names them; set it behind a TLS-terminating load
//     balancer, and wherever nothing in front of this server checks the Host
//     header.
//   - It has expired no more than 60 seconds ago, and its nbf, when set, is
//     no more than 60 seconds ahead.
//   - It carries the team_id, project_id and sandbox_id claims;
//     sandbox_name defaults to sandbox_id, as in the official SDK.
//
// The token proves which sandbox sent a request, not that your team owns it:
// a handler that brokers a secret should compare [Forwarded.TeamID] and
// [Forwarded.ProjectID] with its own.
//
// # Keys
//
// A Verifier has room for the key set of each issuer it trusts, made when
// it is, and for nothing else. The issuer a token names is read before its
// signature can be checked, so it only selects among the trusted ones: a
// token of any other issuer is refused before anything is fetched, and
// leaves nothing behind. A flood of made-up issuers costs neither memory
// nor a share of anything a trusted issuer needs.
//
// A set is fetched when first needed and again once 10 minutes old. A
// token whose key id is not in the cached set makes the verifier fetch the
// set again, at most once per issuer every 30 seconds
// ([WithRefreshInterval]), which is all a flood of made-up key ids costs
// the issuer; a token whose key is in the cached set is verified without
// waiting for such a fetch. Concurrent fetches of one set are merged into
// one. A fetch has 5 seconds, follows no redirect, and reads at most 256
// KiB. Nothing runs in the background: fetches happen inside the request
// that needs them.
//
// # Where it differs from the official SDK
//
// All but the last two refuse only what Vercel does not send:
//
//   - A token without exp is refused (the official SDK accepts it).
//   - A token longer than 16 KiB is refused, and so is one with a crit or
//     b64 header.
//   - A repeated header among the five is refused (the official SDK joins
//     the values).
//   - The forwarded scheme must be http or https, the port a number from 1
//     to 65535, and the path must start with "/".
//   - RSA keys shorter than 2048 bits (as in the official SDK) or longer
//     than 16384 bits are ignored.
//   - A failed fetch counts against the refresh interval like a successful
//     one (the official SDK fetches again on the next request).
//   - Only the issuers named are trusted, each exactly as written (the
//     official SDK trusts any issuer under https://oidc.vercel.com, the
//     host in any case, any port, and fetches the keys of each): a token
//     of a made-up team would otherwise cost a fetch.
//
// # Libraries
//
// Tokens and keys are handled by github.com/go-jose/go-jose/v4: it parses
// compact JWS with an algorithm allow-list, verifies RS256, refuses unknown
// critical headers as RFC 7515 asks, decodes and checks JSON Web Keys, and
// validates exp, nbf and aud with a leeway; one library does all of it. The
// key cache is a small one of this package's own: the JWKS caches for Go
// (keyfunc, jwx) refresh their sets in background goroutines, and here
// nothing may outlive a request. Concurrent fetches are merged with
// golang.org/x/sync/singleflight.
package proxy
