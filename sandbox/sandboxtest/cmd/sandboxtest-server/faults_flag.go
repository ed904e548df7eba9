package main

import (
	"flag"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// faultFlags collects the faults given with --fault, in order.
type faultFlags []sandboxtest.Fault

// register adds the repeatable --fault flag to fl.
func (ff *faultFlags) register(fl *flag.FlagSet) {
	fl.Func("fault", "inject a fault, in the text form of sandboxtest.ParseFault, such as\n"+
		"'POST /v2/sandboxes/sessions/*/cmd status=500 times=1' (repeatable)", func(s string) error {
		f, err := sandboxtest.ParseFault(s)
		if err != nil {
			return err
		}
		*ff = append(*ff, f)
		return nil
	})
}

// inject injects the collected faults into srv.
func (ff faultFlags) inject(srv *sandboxtest.Server) {
	for _, f := range ff {
		srv.Inject(f)
	}
}
