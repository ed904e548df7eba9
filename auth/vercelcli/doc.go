// Package vercelcli gets Vercel OIDC tokens through the Vercel CLI on a
// developer machine, one file per source: the project linked to the working
// directory (.vercel/project.json), the CLI's configuration directories and
// login (auth.json, config.json), the renewal of an expired login, and
// running the vercel command for logins a library cannot read (keyring,
// DPoP).
//
// Its refreshers plug into package auth; Default is auth.Default with the
// refresher that the TypeScript SDK uses.
package vercelcli

import "github.com/sbx-go/vercel-sandbox/auth"

// Default returns auth.Default(opts), with a LinkedProjectRefresher as
// opts.Refresher when it is nil: OIDC tokens are then refreshed before they
// expire, and minted for the project linked in .vercel/project.json when no
// other credentials are found, as the TypeScript SDK does.
func Default(opts auth.DefaultOptions) auth.Provider {
	if opts.Refresher == nil {
		opts.Refresher = &LinkedProjectRefresher{}
	}
	return auth.Default(opts)
}
