package launcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/manifest"
)

// BuildState says what Build did.
type BuildState string

const (
	NoBuild  BuildState = "none"       // the server has no build step
	UpToDate BuildState = "up to date" // its output is newer than its inputs
	Built    BuildState = "built"
)

// A buildError is a build step that failed, with the tail of its output.
type buildError struct {
	Server string
	Err    error
	Output []byte
}

func (e *buildError) Error() string {
	err := e.Err
	if se := (*signalExit)(nil); errors.As(exitError(err), &se) {
		err = se // "killed by SIGKILL", not "signal: killed"
	}
	msg := fmt.Sprintf("server %q: build failed: %v", e.Server, err)
	if len(e.Output) > 0 {
		msg += "\n" + indent(string(e.Output))
	}
	return msg
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// Build runs s's build step in the manifest's directory, in a container of
// c (nothing it starts outlives it: a build tool's daemon neither), unless
// its output (the command) is newer than every file its watch patterns
// match; force builds anyway. Without watch patterns there is nothing to
// compare, and it always builds (build tools such as go build are
// incremental themselves). sb is the server's sandbox (nil: none): the
// build runs in it too, with the manifest's directory, where it writes
// its output, writable.
func Build(ctx context.Context, c *proc.Containment, m *manifest.Manifest, s *manifest.Server, sb *sandbox.Policy, env []string, force bool) (BuildState, time.Duration, error) {
	if len(s.Build) == 0 {
		return NoBuild, 0, nil
	}
	if !force && upToDate(m, s) {
		return UpToDate, 0, nil
	}
	start := time.Now()
	out := proc.NewTail(8 << 10)
	spec := &proc.Spec{Path: s.Build[0], Args: s.Build[1:], Dir: m.Dir, Env: env, Stderr: out, Containment: c, Name: s.Name + "-build"}
	if sb != nil {
		own := *sb
		own.Write = append(slices.Clone(sb.Write), m.Dir)
		spec.Sandbox = &own
	}
	if err := proc.Run(ctx, spec, out); err != nil {
		return Built, time.Since(start), &buildError{Server: s.Name, Err: err, Output: out.Bytes()}
	}
	return Built, time.Since(start), nil
}

// upToDate reports whether the command s runs exists and is newer than every
// file its watch patterns match.
func upToDate(m *manifest.Manifest, s *manifest.Server) bool {
	cmd, ok := s.Command.Literal()
	if !ok || len(s.Watch) == 0 {
		return false
	}
	out, err := os.Stat(m.ResolvePath(cmd))
	if err != nil {
		return false
	}
	newer := false
	_ = walkWatched(m, s, func(path string, info fs.FileInfo) bool {
		if info.ModTime().After(out.ModTime()) {
			newer = true
			return false
		}
		return true
	})
	return !newer
}

// walkWatched calls fn for every regular file under the manifest's
// directory that one of s's watch patterns matches, until fn returns false.
// Each pattern is walked from its longest literal directory, into the
// directories that may hold a match (manifest.GlobMayHold): those the source
// watcher watches, and no others.
func walkWatched(m *manifest.Manifest, s *manifest.Server, fn func(path string, info fs.FileInfo) bool) error {
	for _, g := range s.Watch {
		root := filepath.Join(m.Dir, literalDir(g))
		stop := false
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable or missing: nothing to watch there
			}
			rel, err := filepath.Rel(m.Dir, path)
			if err != nil {
				return nil
			}
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "." {
					rel = ""
				}
				if !manifest.GlobMayHold(g, rel) {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || !manifest.MatchGlob(g, rel) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if !fn(path, info) {
				stop = true
				return filepath.SkipAll
			}
			return nil
		})
		if err != nil {
			return err
		}
		if stop {
			return nil
		}
	}
	return nil
}

// literalDir is the directory part of a pattern before its first wildcard.
func literalDir(g string) string {
	elems := strings.Split(g, "/")
	n := 0
	for n < len(elems)-1 && !strings.ContainsAny(elems[n], "*?[") {
		n++
	}
	return filepath.FromSlash(strings.Join(elems[:n], "/"))
}
