package main

import (
	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/manifest"
)

func (a *app) schemaCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of mcpgen.toml, for editors and CI",
		Long: `Schema prints the JSON Schema (draft 2020-12) of the manifest: every key,
where it goes, its type and what it means, written from the same tables
that mcpgen validate reads. Editors that read a schema for TOML (taplo,
Even Better TOML) complete and check the manifest with it:

  mcpgen schema > mcpgen.schema.json

and, as the manifest's first line:

  #:schema ./mcpgen.schema.json

It checks the manifest's shape; mcpgen validate checks the rest (that a
${VAR} resolves, that each argument of a tool appears in its run).`,
		Example: `  mcpgen schema > mcpgen.schema.json
  mcpgen schema | jq '.properties.servers.additionalProperties.oneOf[].title'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := a.stdout.Write(manifest.Schema())
			return err
		},
	}
}
