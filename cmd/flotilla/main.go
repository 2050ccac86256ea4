// Command flotilla manages a fleet of Kubernetes clusters: see `flotilla --help`.
package main

import (
	"context"
	"fmt"
	"os"

	"flotilla.dev/flotilla/internal/cli"
)

func main() {
	if err := cli.NewRoot().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
