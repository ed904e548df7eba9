package vercelcli_test

import (
	"fmt"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/vercelcli"
)

func ExampleConfigDirs() {
	env := map[string]string{"XDG_DATA_HOME": "/data"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, dir := range vercelcli.ConfigDirs(vercelcli.ConfigDirsParams{LookupEnv: lookup, GOOS: "linux", Home: "/home/ada"}) {
		fmt.Println(dir)
	}
	// Output:
	// /data/com.vercel.cli
	// /home/ada/.now
	// /data/now
}

func ExampleDefault() {
	// The credentials the TypeScript SDK finds, with an expired Vercel CLI
	// login renewed (which rewrites the CLI's auth.json).
	p := vercelcli.Default(auth.DefaultOptions{
		Refresher: &vercelcli.LinkedProjectRefresher{RenewCLILogin: true},
	})
	_ = p // pass p to sandbox.WithCredentials
}
