// Command flotilla manages a fleet of Kubernetes clusters: see `flotilla --help`.
package main

import (
	"context"
	"fmt"
	"os"

	"flotilla.dev/flotilla/internal/cli"
)

func main() {
	err := cli.NewRoot().ExecuteContext(context.Background())
	code, silent := cli.ExitCode(err)
	if !silent {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(code)
}
