package version

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Command is the `version` command of both executables, flotilla and flotilla-agent.
func Command() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the flotilla version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), String()) },
	}
}
