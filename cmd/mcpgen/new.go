package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/templates"
)

func (a *app) newCommand() *cobra.Command {
	var module string
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Scaffold a Go MCP server and add it to the manifest",
		Long: `New writes a standalone Go stdio MCP server in the directory NAME, next to
the manifest: its own module on the official Go MCP SDK, a main.go with one
example tool, a test and a README. It runs go mod tidy there, then adds a
[servers.NAME] entry with build, command and watch to the end of the
manifest, leaving the rest of the file as it was.

mcpgen build NAME then builds and checks it; mcpgen launch rebuilds and
restarts it when you edit it.`,
		Example: `  mcpgen new acme-tools
  mcpgen new acme-tools --module github.com/acme/acme-tools`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.scaffold(cmd.Context(), args[0], module)
		},
	}
	cmd.Flags().StringVar(&module, "module", "", "the new server's Go module path (default NAME)")
	return cmd
}

var newName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

func (a *app) scaffold(ctx context.Context, name, module string) error {
	if a.demo {
		return usageError("mcpgen new adds to your manifest, not to the demo: drop --demo")
	}
	if !newName.MatchString(name) || slices.Contains(manifest.ReservedNames, name) {
		return usageError("%q cannot name a server and its directory: use letters, digits, _ and -, starting with a letter or digit, and not a name Claude Code reserves", name)
	}
	_, path, err := a.findManifest() // named as from here
	if err != nil {
		return fmt.Errorf("%v (mcpgen new adds %q to a manifest)", err, name)
	}
	m, err := manifest.Load(path)
	if err != nil {
		return err
	}
	if m.Server(name) != nil {
		return fmt.Errorf("%s already has a server %q: choose another name", path, name)
	}
	dir := filepath.Join(m.Dir, name)
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s already exists: mcpgen new writes into a new directory only", dir)
	}
	if module == "" {
		module = name
	}
	data := templates.ScaffoldData{Name: name, Dir: name, Module: module, Exe: exeSuffix}
	files, err := templates.Scaffold(data)
	if err != nil {
		return err
	}
	entry, err := templates.Entry(data)
	if err != nil {
		return err
	}

	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(dir) // leave nothing half made
		}
	}()
	for file, content := range files {
		if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
			return err
		}
	}
	if err := a.goModTidy(ctx, dir); err != nil {
		return err
	}
	if err := appendEntry(m, entry); err != nil {
		return err
	}
	done = true
	fmt.Fprintf(a.stderr, "wrote %s/ (a Go MCP server on the official SDK %s) and added [servers.%s] to %s\nnext: mcpgen build %s\n",
		name, templates.SDKVersion, name, path, name)
	return nil
}

// goModTidy resolves the scaffold's dependencies, so that it builds.
func (a *app) goModTidy(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go mod tidy in %s: %v\n%s(mcpgen new needs the go command and the Go module proxy)", dir, err, out.String())
	}
	return nil
}

// appendEntry adds entry at the end of the manifest, leaving the rest of the
// file as it was, and checks that the result is still valid before writing.
func appendEntry(m *manifest.Manifest, entry []byte) error {
	old, err := manifest.ReadFile(m.Path)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	if len(old) > 0 {
		b.WriteByte('\n')
	}
	b.Write(entry)
	if _, err := manifest.Parse(b.Bytes(), m.File, m.Dir); err != nil {
		return fmt.Errorf("adding the entry would make %s invalid, so it was left as it was:\n%v", m.File, err)
	}
	target, err := resolveLinks(m.Path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	return writeAtomic(target, b.Bytes(), fi.Mode().Perm())
}
