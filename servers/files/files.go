// Package files is mcpgen's built-in "files" MCP server: it lists, reads,
// searches, writes and edits files inside one workspace directory and
// nowhere else.
//
// Confinement rests on os.Root: every file system call goes through a root
// opened on the workspace, so that "..", absolute paths and symlinks cannot
// lead out of it, even when the tree changes during a call. Above that, the
// package resolves paths itself (path.go) to say clearly why a path is
// refused and to let symlinks that stay inside work, absolute ones too.
// Directory walks never follow symlinks.
//
// Every limit below is stated in the tool descriptions, so that a model
// knows when a result was cut and how to ask for the rest.
package files

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// Limits of the tools.
const (
	// MaxResultBytes bounds the text of any one tool result, file
	// contents included.
	MaxResultBytes = 256 << 10
	// DefaultReadLines is how many lines read_file returns when no limit
	// is given.
	DefaultReadLines = 2000
	// MaxEditBytes is the largest file that edit_file rewrites; it reads
	// the whole file.
	MaxEditBytes = 1 << 20
	// MaxListEntries bounds a directory listing.
	MaxListEntries = 1000
	// MaxSearchMatches bounds the matches of one search.
	MaxSearchMatches = 200
	// MaxSearchFileBytes is the largest file whose contents search_files
	// reads; larger ones are skipped and counted.
	MaxSearchFileBytes = 4 << 20
	// MaxSearchEntries bounds the files and directories that one search
	// visits, so that a huge tree cannot stall the server.
	MaxSearchEntries = 100_000
	// MaxScanBytes bounds what one read_file or search_files call reads of
	// files, lines skipped to reach an offset included, so that a line
	// offset deep into a huge (or sparse) file cannot hold a CPU for
	// minutes.
	MaxScanBytes = 64 << 20
)

// lockWait is the longest that a write or an edit waits for the write
// locks (see lock.go) before it gives up with an error.
const lockWait = 30 * time.Second

// Options configures the server.
type Options struct {
	// Root is the workspace directory (WORKSPACE_DIR), an absolute path.
	// The server opens it once, in New: a directory moved later is
	// followed, not looked up again.
	Root string
	// ReadOnly removes write_file and edit_file: they are not listed.
	ReadOnly bool
	// Protect lists globs (manifest.MatchGlobHidden: wildcards reach hidden directories; relative to the
	// workspace) that write_file and edit_file refuse; see protect.go. Nil
	// means manifest.DefaultProtect, .git and all it holds; an empty list
	// protects nothing.
	Protect []string
	// Version is the version the server reports in initialize.
	Version string
	// BroadRoot lets Root be the root of the file system or the user's
	// home directory, which New refuses otherwise: set it only when the
	// manifest names that directory itself (workspace.dir), not when it
	// is merely where an agent was started.
	BroadRoot bool
}

// New returns the files server for the workspace opts.Root, which must
// exist. The workspace stays open for the life of the server.
func New(opts Options) (*mcp.Server, error) {
	w, err := openWorkspace(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	if err := checkRoot(w.dir, opts.BroadRoot); err != nil {
		w.root.Close()
		return nil, fmt.Errorf("files: %w", err)
	}
	if opts.Protect != nil {
		for _, g := range opts.Protect {
			if err := checkProtect(g); err != nil {
				return nil, fmt.Errorf("files: protect pattern %q: %v", g, err)
			}
		}
		w.protect = opts.Protect
	}
	version := opts.Version
	if version == "" {
		version = "devel"
	}
	s := mcp.NewServer(mcp.Implementation{Name: "files", Title: "Workspace files", Version: version}, &mcp.ServerOptions{
		Instructions: instructions(w.dir, opts.ReadOnly, w.protect),
	})
	for _, t := range tools(w, opts.ReadOnly) {
		if err := s.AddTool(t); err != nil {
			return nil, fmt.Errorf("files: %w", err)
		}
	}
	return s, nil
}

func instructions(dir string, readOnly bool, protect []string) string {
	s := fmt.Sprintf("These tools work on the files of the workspace %s and nothing outside it. "+
		"Give paths relative to it (an absolute path must lie inside it); "+
		"symlinks that lead outside are refused. "+
		"Names with unusual characters are shown as Go string literals and can be passed back as shown.", dir)
	switch {
	case readOnly:
		s += " The workspace is read-only: nothing can be written."
	case len(protect) > 0:
		s += fmt.Sprintf(" Paths matching %s are protected: they can be read but not written.", strings.Join(quoteAll(protect), ", "))
	}
	return s
}
