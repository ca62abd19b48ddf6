// Command flotilla is Flotilla's single binary: the hub, the klusterlet agent, the
// local default (`flotilla dev`) and the clusteradm-compatible CLI.
package main

import (
	"fmt"
	"os"
)

func main() {
	if ran, err := runAsPlugin(os.Args, os.Stdout); ran {
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		return
	}
	if err := newRootCommand().Execute(); err != nil {
		code := exitCode(err)
		if code == 1 {
			fmt.Fprintln(os.Stderr, "Error:", err)
		} else {
			// Other codes are verdicts (2: a policy is NonCompliant), not failures.
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	}
}
