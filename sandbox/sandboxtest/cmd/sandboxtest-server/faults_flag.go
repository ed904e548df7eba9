package main

import (
	"flag"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
)

// faultFlags collects the faults given with --fault, in order.
type faultFlags []fault.Fault

// register adds the repeatable --fault flag to fl.
func (ff *faultFlags) register(fl *flag.FlagSet) {
	fl.Func("fault", "inject a fault, in the text form of fault.Parse, such as\n"+
		"'POST /v2/sandboxes/sessions/*/cmd status=500 times=1' (repeatable)", func(s string) error {
		f, err := fault.Parse(s)
		if err != nil {
			return err
		}
		*ff = append(*ff, f)
		return nil
	})
}

// inject injects the collected faults into inj.
func (ff faultFlags) inject(inj *fault.Injector) {
	for _, f := range ff {
		inj.Inject(f)
	}
}
