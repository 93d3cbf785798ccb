package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/pelletier/go-toml/v2"

	"github.com/mcpgen/mcpgen/internal/statefile"
)

// MaxFileSize bounds a manifest: a few kilobytes is usual, and a file
// beyond this is not one, or one that nothing should read whole.
const MaxFileSize = 16 << 20

// Load reads and validates the manifest at path. A manifest with problems
// returns Errors, every one of them, in file order.
func Load(path string) (*Manifest, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(data, path, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	m.Path = abs
	m.canonical = abs
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		m.canonical = filepath.Join(dir, filepath.Base(abs))
	}
	return m, nil
}

// ReadFile reads the manifest file at path, through its links, refusing
// what is not a regular file without waiting on it (a named pipe put
// there would block a plain read until a writer came: emit forever, a
// launcher's reload for good) and a file beyond MaxFileSize.
func ReadFile(path string) ([]byte, error) {
	data, err := statefile.ReadRegular(path, MaxFileSize)
	var ke *statefile.KindError
	if errors.As(err, &ke) {
		return nil, fmt.Errorf("%s is %s, not a regular file: a manifest must be a file (or a link to one)", path, statefile.Kind(ke.Mode))
	}
	return data, err
}

// A NotFoundError says that Find found no manifest.
type NotFoundError struct {
	Name string // what was looked for: mcpgen.toml, or a relative path
	Dir  string // where the search started
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s in %s or above", e.Name, e.Dir)
}

// Find looks for the manifest name (a relative path, such as mcpgen.toml
// or deploy/mcpgen.toml) in dir, then in each directory above it, as git
// looks for .git, and returns the first it finds, or a *NotFoundError. An
// absolute name is only checked. Agents start project servers in the
// project's directory or below it, so the manifest that a committed
// config names by a relative path is found from wherever they run. Like
// GIT_CEILING_DIRECTORIES, ceilings are directories that the search does
// not go up into: it stops below them.
func Find(dir, name string, ceilings ...string) (string, error) {
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	for d := filepath.Clean(dir); ; {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		up := filepath.Dir(d)
		if up == d || slices.ContainsFunc(ceilings, func(c string) bool { return c != "" && filepath.Clean(c) == up }) {
			return "", &NotFoundError{Name: name, Dir: dir}
		}
		d = up
	}
}

// Parse decodes and validates manifest data; file names it in errors and dir
// is where its relative paths resolve.
func Parse(data []byte, file, dir string) (*Manifest, error) {
	if bytes.HasPrefix(data, utf8BOM) {
		return nil, Errors{{File: file, Pos: Position{1, 1}, Msg: "the file starts with a UTF-8 byte order mark (BOM), which TOML does not allow: save it as UTF-8 without a BOM"}}
	}
	// Positions first: indexing walks the file once and refuses a shape
	// beyond the limits (MaxDepth, MaxTableKeys, MaxKeys) before anything
	// decodes it.
	pos, limit := indexPositions(data)
	if limit != nil {
		return nil, Errors{limit.error(file)}
	}
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, Errors{{File: file, Pos: Position{line, col}, Msg: "invalid TOML: " + de.Error()}}
		}
		return nil, fmt.Errorf("%s: invalid TOML: %w", file, err)
	}
	if len(raw) == 0 {
		// A file cut to nothing by a save or a deploy that went wrong would
		// otherwise stop every server of a launcher that follows it.
		return nil, Errors{{File: file, Pos: Position{1, 1}, Msg: fmt.Sprintf("%s is empty (nothing but whitespace and comments), which mcpgen takes for a save cut short rather than for no servers: write `version = 1` to run no servers", filepath.Base(file))}}
	}
	d := &decoder{file: file, pos: pos}
	m := d.manifest(raw)
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, d.errs
	}
	d.warnings.sort()
	m.File, m.Dir, m.pos, m.Warnings = file, dir, d.pos, d.warnings
	return m, nil
}

// utf8BOM is the byte order mark that some Windows editors put at the start
// of UTF-8 files.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (d *decoder) manifest(raw map[string]any) *Manifest {
	m := &Manifest{Version: 1, Gateway: Gateway{Prefix: GatewayPrefixConflicts}}
	decodeKeys(d, topKeys, nil, raw, m)
	// The servers once the workspace variables are known: a server's
	// context may name them.
	for _, v := range m.Workspace.Vars {
		d.varNames = append(d.varNames, v.Name)
	}
	if v, ok := raw["servers"]; ok {
		p := []string{"servers"}
		if t, ok := d.table(p, v); ok {
			for _, n := range d.sortedKeys(p, t) {
				if s := d.server(child(p, n), t[n]); s != nil {
					m.Servers = append(m.Servers, s)
				}
			}
		}
	}
	if m.Prefix != "" {
		for _, s := range m.Servers {
			entry := m.Prefix + s.Name
			switch {
			case len(entry) > 64:
				d.keyError([]string{"servers", s.Name}, "with prefix %q the entry name %q is longer than 64 characters: shorten the name or the prefix", m.Prefix, entry)
			case slices.Contains(ReservedNames, entry):
				d.keyError([]string{"servers", s.Name}, "with prefix %q the entry name is %q, which Claude Code reserves: choose another name or prefix", m.Prefix, entry)
			}
		}
	}
	return m
}

func (d *decoder) session(path []string, v any) Session {
	var s Session
	if t, ok := d.table(path, v); ok {
		decodeKeys(d, sessionKeys, path, t, &s)
	}
	return s
}

func (d *decoder) gateway(path []string, v any) Gateway {
	g := Gateway{Prefix: GatewayPrefixConflicts}
	if t, ok := d.table(path, v); ok {
		decodeKeys(d, gatewayKeys, path, t, &g)
	}
	return g
}

func (d *decoder) workspace(path []string, v any) Workspace {
	var w Workspace
	if t, ok := d.table(path, v); ok {
		decodeKeys(d, workspaceKeys, path, t, &w)
	}
	return w
}
