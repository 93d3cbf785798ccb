package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Load reads and validates the manifest at path. A manifest with problems
// returns Errors, every one of them, in file order.
func Load(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
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
	return m, nil
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

var (
	serverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	ownerName  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	prefixName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	toolName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
)

func (d *decoder) manifest(raw map[string]any) *Manifest {
	m := &Manifest{Version: 1, Gateway: Gateway{Prefix: GatewayPrefixConflicts}}
	var varNames []string
	for _, k := range d.sortedKeys(nil, raw) {
		p := []string{k}
		switch k {
		case "version":
			switch n := raw[k].(type) {
			case int64:
				if n != 1 {
					d.valueError(p, "unsupported version %v: this mcpgen reads version 1", n)
				}
			default:
				d.valueError(p, "\"version\" must be the integer 1, not %s", describe(n))
			}
		case "name":
			if s, ok := d.str(p, raw[k]); ok {
				if !ownerName.MatchString(s) {
					d.valueError(p, "\"name\" %q is not valid: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", s)
				}
				m.Name = s
			}
		case "prefix":
			if s, ok := d.str(p, raw[k]); ok {
				if !prefixName.MatchString(s) {
					d.valueError(p, "\"prefix\" %q is not valid: use 1 to 32 letters, digits, _ or -, such as \"acme-\"", s)
				}
				m.Prefix = s
			}
		case "session":
			m.Session = d.session(p, raw[k])
		case "gateway":
			m.Gateway = d.gateway(p, raw[k])
		case "workspace":
			m.Workspace = d.workspace(p, raw[k])
			for _, v := range m.Workspace.Vars {
				varNames = append(varNames, v.Name)
			}
		case "servers":
			// below, once the workspace variables are known
		default:
			d.unknownKey(p, topKeys)
		}
	}
	if v, ok := raw["servers"]; ok {
		p := []string{"servers"}
		if t, ok := d.table(p, v); ok {
			for _, n := range d.sortedKeys(p, t) {
				if s := d.server(child(p, n), t[n], varNames); s != nil {
					m.Servers = append(m.Servers, s)
				}
			}
		}
	}
	if m.Prefix != "" {
		for _, s := range m.Servers {
			if len(m.Prefix)+len(s.Name) > 64 {
				d.keyError([]string{"servers", s.Name}, "with prefix %q the entry name %q is longer than 64 characters: shorten the name or the prefix", m.Prefix, m.Prefix+s.Name)
			}
		}
	}
	return m
}

// topKeys are the keys of the manifest's top level.
var topKeys = []string{"version", "name", "prefix", "workspace", "session", "gateway", "servers"}

func (d *decoder) session(path []string, v any) Session {
	var s Session
	t, ok := d.table(path, v)
	if !ok {
		return s
	}
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		switch k {
		case "idle_exit":
			s.IdleExit = d.duration(p, t[k])
		default:
			d.unknownKey(p, []string{"idle_exit"})
		}
	}
	return s
}

var gatewayPrefixes = []string{GatewayPrefixConflicts, GatewayPrefixAlways}

func (d *decoder) gateway(path []string, v any) Gateway {
	g := Gateway{Prefix: GatewayPrefixConflicts}
	t, ok := d.table(path, v)
	if !ok {
		return g
	}
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		switch k {
		case "prefix":
			if s, ok := d.str(p, t[k]); ok {
				if !slices.Contains(gatewayPrefixes, s) {
					d.valueError(p, "unknown prefix mode %q%s; use %s", s, suggest(s, gatewayPrefixes), strings.Join(gatewayPrefixes, " or "))
				}
				g.Prefix = s
			}
		default:
			d.unknownKey(p, []string{"prefix"})
		}
	}
	return g
}

func (d *decoder) workspace(path []string, v any) Workspace {
	var w Workspace
	t, ok := d.table(path, v)
	if !ok {
		return w
	}
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		switch k {
		case "dir":
			if s, ok := d.str(p, t[k]); ok {
				w.Dir = d.template(p, s)
			}
		case "user":
			if s, ok := d.str(p, t[k]); ok {
				w.User = d.template(p, s)
			}
		case "vars":
			w.Vars = d.vars(p, t[k], varName, "variable name (letters, digits and _, not starting with a digit)")
			for _, v := range w.Vars {
				if v.Name == VarWorkspaceID || v.Name == VarWorkspaceDir || v.Name == VarUserID {
					d.keyError(child(p, v.Name), "%q is set by mcpgen itself; choose another name", v.Name)
				}
			}
		default:
			d.unknownKey(p, []string{"dir", "user", "vars"})
		}
	}
	return w
}
