package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/templates"
)

// noteShadowed says when the new manifest hides another one above it:
// commands find the nearest, as git finds the nearest .git.
func (a *app) noteShadowed(path string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	above, err := manifest.Find(filepath.Dir(filepath.Dir(abs)), filepath.Base(abs), ceilings()...)
	if err != nil {
		return
	}
	fmt.Fprintf(a.stderr, "note: %s is above it: commands run in %s and below now read the new one\n", above, filepath.Dir(abs))
}

func (a *app) initCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Write a commented starter mcpgen.toml",
		Long: `Init writes a starter manifest with every kind of server explained. It
never overwrites an existing file.`,
		Example: `  mcpgen init
  mcpgen init --manifest config/mcpgen.toml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := a.manifestPath
			if path == "" {
				path = defaultManifest
			}
			// The example's config/mcpgen.toml: a directory that does not
			// exist yet is made, as an editor would.
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%s already exists: mcpgen init never overwrites it; edit it, or remove it first", path)
			}
			if err != nil {
				return err
			}
			if _, err := f.Write(templates.Starter); err != nil {
				f.Close()
				os.Remove(path)
				return err
			}
			if err := f.Close(); err != nil {
				os.Remove(path)
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %s: check it with mcpgen validate, then mcpgen emit --provider codex|claude\n", path)
			a.noteShadowed(path)
			return nil
		},
	}
}
