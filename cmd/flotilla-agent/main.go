// Command flotilla-agent is the member agent alone: `flotilla-agent agent` does what
// `flotilla agent` does, from an executable that links only the agent, so the process a
// member runs all the time maps a fraction of the pages (see docs/performance.md).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/internal/agentcmd"
	"flotilla.dev/flotilla/internal/version"
)

func main() {
	root := &cobra.Command{
		Use:   "flotilla-agent",
		Short: "The Flotilla member agent (the same `agent` command as the flotilla binary, alone)",
		Long: `flotilla-agent runs the agent of one member cluster: "flotilla-agent agent --help".
It is the "agent" command of the flotilla binary built on its own, so that the process every
member runs all the time is small. "flotilla join --local" starts it when it lies next to
the flotilla executable.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.AddCommand(agentcmd.New(), version.Command())
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
