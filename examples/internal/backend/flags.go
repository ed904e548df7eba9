package backend

import "flag"

// LocalFlag declares the -local flag that every example has: use the
// embedded local server even when Vercel credentials are present. Call it
// before flag.Parse.
func LocalFlag() *bool {
	return flag.Bool("local", false, "use the embedded local server even when Vercel credentials are present")
}
