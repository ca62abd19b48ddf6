// Command flotilla is Flotilla's single binary: the hub, the klusterlet agent, the
// local default (`flotilla dev`) and the clusteradm-compatible CLI.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(exitCode(err))
	}
}
