package main

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	json "github.com/goccy/go-json"
	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/manifest"
)

func (a *app) validateCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the manifest and report every problem",
		Long: `Validate reads the manifest and reports every problem at once, each with
its file, line and column, the server and key, and what would be valid.
It exits 1 when there is any. Warnings, about what is valid but likely a
risk (a declared tool whose program the model chooses, say), are shown
too and do not fail, and so are hints: servers that npx or uvx fetch run
someone else's code with your rights, and validate suggests the sandbox
for them (sandbox.enabled = true); on Windows it says that the sandbox is
not enforced yet.

With --json it prints one JSON object, for editors and CI:
{"file", "valid", "problems": [{"file", "line", "column", "path",
"message", "suggestion", "severity"}]}, where path is the key's dotted path
(servers.git.tools.log.run), suggestion what to write instead when there
is one clear fix ("command", ["git", "status"]), and severity "error",
"warning" or "hint".`,
		Example: `  mcpgen validate
  mcpgen validate --manifest deploy/mcpgen.toml
  mcpgen validate --json | jq '.problems[] | select(.severity == "error")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := a.loadManifest()
			if asJSON {
				return a.validateJSON(m, err)
			}
			// A problem quotes the manifest, whose strings may hold
			// control characters: each is shown escaped, on its line.
			var errs manifest.Errors
			if errors.As(err, &errs) {
				for _, e := range errs {
					fmt.Fprintln(a.stderr, termtext.Line(e.Error()))
				}
				fmt.Fprintf(a.stderr, "%d problem%s\n", len(errs), plural(len(errs)))
				return silentFailure
			}
			if err != nil {
				return err
			}
			for _, w := range slices.Concat(m.Warnings, m.SandboxWarnings(runtime.GOOS, sandbox.Inspect), m.SandboxHints(runtime.GOOS)) {
				fmt.Fprintln(a.stderr, termtext.Line(w.Error()))
			}
			fmt.Fprintf(a.stdout, "%s: valid, %s\n", termtext.Line(m.File), serverSummary(m.Servers))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print every problem as JSON")
	return cmd
}

// problem is one problem of validate --json.
type problem struct {
	File       string `json:"file"`
	Line       int    `json:"line"`
	Column     int    `json:"column"`
	Path       string `json:"path"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion"`
	Severity   string `json:"severity"`
}

// validation is what validate --json prints.
type validation struct {
	File     string    `json:"file"`
	Valid    bool      `json:"valid"`
	Servers  []string  `json:"servers"`
	Problems []problem `json:"problems"`
}

// validateJSON prints what loading the manifest found, errors and warnings
// alike, as one JSON object; a manifest that cannot be read at all (none
// found, a file that cannot be opened) is one problem without a place.
func (a *app) validateJSON(m *manifest.Manifest, err error) error {
	v := validation{Servers: []string{}, Problems: []problem{}}
	add := func(es manifest.Errors) {
		for _, e := range es {
			sev := "error"
			switch {
			case e.Warning:
				sev = "warning"
			case e.Hint:
				sev = "hint"
			}
			v.Problems = append(v.Problems, problem{File: e.File, Line: e.Pos.Line, Column: e.Pos.Column, Path: e.Path, Message: e.Message(), Suggestion: e.Suggestion, Severity: sev})
		}
	}
	var errs manifest.Errors
	switch {
	case errors.As(err, &errs):
		v.File = errs[0].File
		add(errs)
	case err != nil:
		v.Problems = append(v.Problems, problem{Message: err.Error(), Severity: "error"})
	default:
		v.File, v.Valid = m.File, true
		for _, s := range m.Servers {
			v.Servers = append(v.Servers, s.Name)
		}
		add(m.Warnings)
		add(m.SandboxWarnings(runtime.GOOS, sandbox.Inspect))
		add(m.SandboxHints(runtime.GOOS))
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if !v.Valid {
		return silentFailure
	}
	return nil
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
