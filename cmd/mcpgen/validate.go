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
It exits 1 when there is any.`,
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
			names := make([]string, len(m.Servers))
			for i, s := range m.Servers {
				names[i] = s.Name
			}
			fmt.Fprintf(a.stdout, "%s: valid, %d server%s", m.File, len(names), plural(len(names)))
			if len(names) > 0 {
				fmt.Fprintf(a.stdout, " (%s)", strings.Join(names, ", "))
			}
			fmt.Fprintln(a.stdout)
			return nil
		},
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
