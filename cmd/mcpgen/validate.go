package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/manifest"
)

func (a *app) validateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the manifest and report every problem",
		Long: `Validate reads the manifest and reports every problem at once, each with
its file, line and column, the server and key, and what would be valid.
It exits 1 when there is any. Warnings, about what is valid but likely a
risk (a declared tool whose program the model chooses, say), are shown
too and do not fail.`,
		Example: `  mcpgen validate
  mcpgen validate --manifest deploy/mcpgen.toml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := a.loadManifest(true)
			var errs manifest.Errors
			if errors.As(err, &errs) {
				for _, e := range errs {
					fmt.Fprintln(a.stderr, e)
				}
				fmt.Fprintf(a.stderr, "%d problem%s\n", len(errs), plural(len(errs)))
				return silentFailure
			}
			if err != nil {
				return err
			}
			for _, w := range m.Warnings {
				fmt.Fprintln(a.stderr, w)
			}
			fmt.Fprintf(a.stdout, "%s: valid, %s\n", m.File, serverSummary(m.Servers))
			return nil
		},
	}
}

// listedServers is how many server names validate lists before it only
// counts: a manifest of 10,000 servers gets a line, not 10,000 names.
const listedServers = 10

// serverSummary says how many servers there are and names the first ones:
// "2 servers (files, git)", "10000 servers (s0, ..., s9 and 9990 more)".
func serverSummary(servers []*manifest.Server) string {
	s := fmt.Sprintf("%d server%s", len(servers), plural(len(servers)))
	if len(servers) == 0 {
		return s
	}
	names := make([]string, 0, listedServers)
	for _, srv := range servers[:min(len(servers), listedServers)] {
		names = append(names, srv.Name)
	}
	s += " (" + strings.Join(names, ", ")
	if more := len(servers) - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s + ")"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
