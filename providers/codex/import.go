package codex

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// ImportFormat names what Import reads, for people.
const ImportFormat = "Codex config.toml"

// importMark matches the comment line that marks a table as written by
// mcpgen, whatever its version of the marker says after "mcpgen:".
var importMark = lazyregexp.New(`^#\s*mcpgen:`)

// Import reads the [mcp_servers.NAME] tables of a Codex config.toml (the
// user's, or a project's .codex/config.toml), in file order, as the
// manifest holds them. Codex expands no ${VAR}, so every value is literal
// text; env_vars become NAME = "${NAME}" (which emit turns back into
// env_vars), bearer_token_env_var becomes bearer_token_env, env_http_headers
// become headers that reference their variable, and seconds become
// durations. Keys mcpgen has no equivalent for are left out, each with a
// note; Codex's approval tables ([mcp_servers.NAME.tools.TOOL]) stay in the
// file, where emit keeps them.
//
// What Codex itself would reject (a server with both command and url, a
// value of the wrong type) is an error at FILE:LINE:COL.
func Import(data []byte, file string) (*providers.ImportedFile, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: invalid TOML: %s", file, line, col, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, fmt.Errorf("%s: invalid TOML: %w", file, err)
	}
	out := &providers.ImportedFile{File: file, Format: ImportFormat, Provider: Name}
	raw, ok := doc["mcp_servers"]
	if !ok {
		return out, nil
	}
	ix := indexServers(data)
	servers, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s:%s: mcp_servers must be a table of servers, [mcp_servers.NAME]", file, ix.at("mcp_servers"))
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return ix.order(a) - ix.order(b) })
	var errs []error
	var approvals []string
	for _, name := range names {
		table, ok := servers[name].(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s:%s: mcp_servers.%s must be a table", file, ix.at("mcp_servers", name), manifest.TOMLKey(name)))
			continue
		}
		r := &reader{file: file, name: name, ix: ix}
		s := r.server(table)
		if len(r.errs) > 0 {
			errs = append(errs, r.errs...)
			continue
		}
		if _, ok := table["tools"]; ok {
			approvals = append(approvals, name)
		}
		if r.skip != "" {
			out.Skip(name, ix.line(name), "%s", r.skip)
			continue
		}
		out.Add(s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(approvals) > 0 {
		tables := make([]string, len(approvals))
		for i, n := range approvals {
			tables[i] = "[mcp_servers." + manifest.TOMLKey(n) + ".tools.*]"
		}
		out.Notes = append(out.Notes, fmt.Sprintf("Codex's approval settings (%s) are not servers: they stay in %s, and emit keeps them in place.", strings.Join(tables, ", "), file))
	}
	return out, nil
}

// serverIndex knows where each server of the file starts, and where its
// keys are, for messages; and which servers mcpgen marked as its own.
type serverIndex struct {
	first  map[string]int  // server -> order of first appearance
	lines  map[string]int  // server -> line of its table (or first key)
	marked map[string]bool // server -> the line above its table is mcpgen's mark
	keys   map[string]int  // key path ("mcp_servers\x00x\x00env") -> offset of the key
	// starts holds the offset where each line starts: the parser's own
	// Shape counts lines from the start of the file on every call, which
	// is quadratic in the size of the file.
	starts []int
}

func (ix *serverIndex) order(name string) int {
	if o, ok := ix.first[name]; ok {
		return o
	}
	return math.MaxInt32 // unseen (the walk failed): after the others
}

func (ix *serverIndex) line(name string) int { return ix.lines[name] }

// position returns the 1-based line and column (in bytes) of an offset.
func (ix *serverIndex) position(offset int) (line, col int) {
	i, found := slices.BinarySearch(ix.starts, offset)
	if !found {
		i--
	}
	return i + 1, offset - ix.starts[i] + 1
}

// at returns "LINE:COL" of a key path, or of the nearest enclosing key.
func (ix *serverIndex) at(path ...string) string {
	for n := len(path); n > 0; n-- {
		if off, ok := ix.keys[strings.Join(path[:n], "\x00")]; ok {
			line, col := ix.position(off)
			return fmt.Sprintf("%d:%d", line, col)
		}
	}
	return "1:1"
}

// indexServers walks the file with go-toml's parser, which keeps the order
// and the comments that decoding forgets.
func indexServers(data []byte) *serverIndex {
	ix := &serverIndex{first: map[string]int{}, lines: map[string]int{}, marked: map[string]bool{}, keys: map[string]int{}, starts: []int{0}}
	for i, b := range data {
		if b == '\n' {
			ix.starts = append(ix.starts, i+1)
		}
	}
	p := &unstable.Parser{KeepComments: true}
	p.Reset(data)
	var table []string
	lastComment, lastCommentLine := "", 0
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Comment:
			lastComment = string(e.Data)
			lastCommentLine, _ = ix.position(int(e.Raw.Offset))
		case unstable.Table, unstable.ArrayTable:
			table = ix.addKey(nil, e.Key())
			if len(table) == 2 && table[0] == "mcp_servers" {
				line, _ := ix.position(ix.keys[strings.Join(table, "\x00")])
				if lastCommentLine == line-1 && importMark.MatchString(lastComment) {
					ix.marked[table[1]] = true
				}
			}
		case unstable.KeyValue:
			ix.addKeyValue(table, e)
		}
	}
	return ix
}

// addKey records the offset of every prefix of a dotted key under
// mcp_servers, and the first appearance of each server; it returns the
// full path.
func (ix *serverIndex) addKey(prefix []string, it unstable.Iterator) []string {
	path := slices.Clone(prefix)
	for it.Next() {
		k := it.Node()
		path = append(path, string(k.Data))
		if path[0] != "mcp_servers" {
			continue
		}
		pk := strings.Join(path, "\x00")
		if _, ok := ix.keys[pk]; !ok {
			ix.keys[pk] = int(k.Raw.Offset)
		}
		if len(path) == 2 {
			if _, ok := ix.first[path[1]]; !ok {
				ix.first[path[1]] = len(ix.first)
				ix.lines[path[1]], _ = ix.position(ix.keys[pk])
			}
		}
	}
	return path
}

func (ix *serverIndex) addKeyValue(table []string, kv *unstable.Node) {
	path := ix.addKey(table, kv.Key())
	if v := kv.Value(); v.Kind == unstable.InlineTable {
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				ix.addKeyValue(path, c)
			}
		}
	}
}

// reader turns one server's table into a manifest server. Problems that
// Codex would reject are errors; what mcpgen cannot hold skips the server.
type reader struct {
	file, name string
	ix         *serverIndex
	errs       []error
	skip       string
}

func (r *reader) errorf(key []string, format string, args ...any) {
	path := append([]string{"mcp_servers", r.name}, key...)
	r.errs = append(r.errs, fmt.Errorf("%s:%s: server %q: %s", r.file, r.ix.at(path...), r.name, fmt.Sprintf(format, args...)))
}

// The keys of a Codex server table, by transport.
var (
	stdioKeys  = []string{"command", "args", "env", "env_vars", "cwd"}
	remoteKeys = []string{"url", "bearer_token_env_var", "bearer_token", "http_headers", "env_http_headers", "http_headers_helper", "oauth_resource", "scopes"}
)

func (r *reader) server(t map[string]any) *providers.ImportedServer {
	s := &manifest.Server{Name: r.name, Enabled: true}
	imp := &providers.ImportedServer{Server: s, Line: r.ix.line(r.name), Managed: r.ix.marked[r.name]}
	_, hasCommand := t["command"]
	_, hasURL := t["url"]
	switch {
	case hasCommand && hasURL:
		r.errorf([]string{"url"}, "a server has command (stdio) or url (streamable HTTP), not both: Codex rejects it too")
		return nil
	case hasCommand:
		s.Kind = manifest.KindCommand
		// No workspace context, as under Codex; the header says how to add it.
		s.Context = manifest.ContextSelect{None: true}
	case hasURL:
		s.Kind = manifest.KindRemote
	default:
		r.errorf(nil, "no command and no url: Codex rejects it as an invalid transport; give it one")
		return nil
	}
	for _, kv := range r.table(nil, t) {
		k, v := kv.Name, kv.Value
		key := []string{k}
		if s.Kind == manifest.KindRemote && slices.Contains(stdioKeys, k) || s.Kind == manifest.KindCommand && slices.Contains(remoteKeys, k) {
			r.errorf(key, "%q is not supported for a %s server: Codex rejects it too; remove it", k, map[bool]string{true: "stdio", false: "streamable HTTP"}[hasCommand])
			continue
		}
		switch k {
		case "command":
			s.Command = r.literal(key, r.str(key, v))
		case "args":
			for i, a := range r.strs(key, v) {
				s.Args = append(s.Args, r.literal(append(key, fmt.Sprintf("[%d]", i)), a))
			}
		case "env":
			for _, kv := range r.table(key, v) {
				s.Env = append(s.Env, manifest.Var{Name: kv.Name, Value: r.literal(append(key, kv.Name), r.str(append(key, kv.Name), kv.Value))})
			}
		case "env_vars":
			r.envVars(imp, key, v)
		case "cwd":
			dir := r.str(key, v)
			s.Cwd = r.literal(key, dir)
			if dir != "" && !filepath.IsAbs(dir) {
				imp.NoteKey("cwd", "relative: Codex resolved it against its own working directory, mcpgen resolves it against the manifest's")
			}
		case "url":
			s.URL = r.literal(key, r.str(key, v))
		case "bearer_token_env_var":
			s.BearerTokenEnv = r.str(key, v)
		case "bearer_token":
			// Codex refuses an inline token; as a header, it is hidden
			// like any other literal secret.
			s.Headers = append(s.Headers, manifest.Var{Name: "Authorization", Value: manifest.Template{{Text: "Bearer " + r.str(key, v)}}})
			imp.Note("bearer_token (which Codex rejects) became a variable of the environment.")
		case "http_headers":
			for _, kv := range r.table(key, v) {
				s.Headers = append(s.Headers, manifest.Var{Name: kv.Name, Value: r.literal(append(key, kv.Name), r.str(append(key, kv.Name), kv.Value))})
			}
		case "env_http_headers":
			for _, kv := range r.table(key, v) {
				name := r.str(append(key, kv.Name), kv.Value)
				s.Headers = append(s.Headers, manifest.Var{Name: kv.Name, Value: manifest.Template{{Ref: name}}})
			}
		case "startup_timeout_sec":
			s.StartupTimeout = r.duration(imp, key, v, time.Second)
		case "startup_timeout_ms":
			s.StartupTimeout = r.duration(imp, key, v, time.Millisecond)
		case "tool_timeout_sec":
			s.ToolTimeout = r.duration(imp, key, v, time.Second)
		case "enabled":
			b, ok := v.(bool)
			if !ok {
				r.errorf(key, "\"enabled\" must be true or false")
			}
			s.Enabled = b
		case "enabled_tools":
			s.EnabledTools = r.strs(key, v)
			if s.EnabledTools == nil {
				s.EnabledTools = []string{}
			}
		case "disabled_tools":
			s.DisabledTools = r.strs(key, v)
		case "tools":
			// Approval tables: not part of the server; Import notes them.
		case "required":
			imp.Note("required = %v left out: mcpgen has no such setting (Codex refuses to start a session when a required server fails).", v)
		case "http_headers_helper", "oauth_resource", "scopes":
			imp.Note("%s left out: mcpgen has no such setting; keep the server in %s by hand if it needs it.", k, r.file)
		default:
			imp.Note("Unknown key %q left out (Codex's strict loader rejects it too).", k)
		}
	}
	// Codex holds headers in maps, which have no order: by name, then.
	slices.SortStableFunc(s.Headers, func(a, b manifest.Var) int { return strings.Compare(a.Name, b.Name) })
	return imp
}

// envVars reads env_vars: names, or {name, source} tables, of variables
// that Codex copies from its own environment. Each becomes NAME =
// "${NAME}", which emit writes back as env_vars.
func (r *reader) envVars(imp *providers.ImportedServer, key []string, v any) {
	list, ok := v.([]any)
	if !ok {
		r.errorf(key, "\"env_vars\" must be an array of variable names")
		return
	}
	for i, e := range list {
		var name string
		switch e := e.(type) {
		case string:
			name = e
		case map[string]any:
			name, _ = e["name"].(string)
			if src, _ := e["source"].(string); src != "" && src != "local" {
				imp.Note("env_vars[%d]: source = %q left out: mcpgen passes the variable from the agent's own environment.", i, src)
			}
		}
		if name == "" {
			r.errorf(append(key, fmt.Sprintf("[%d]", i)), "an element of \"env_vars\" must be a variable name or {name = \"...\"}")
			continue
		}
		if slices.ContainsFunc(imp.Server.Env, func(v manifest.Var) bool { return v.Name == name }) {
			imp.Note("env_vars names %s, which env sets too: the value of env is kept.", name)
			continue
		}
		imp.Server.Env = append(imp.Server.Env, manifest.Var{Name: name, Value: manifest.Template{{Ref: name}}})
	}
}

// literal returns text as a manifest value that is literal text. Text
// holding "${" has no spelling in the manifest: the server is skipped.
func (r *reader) literal(key []string, text string) manifest.Template {
	if strings.Contains(text, "${") && r.skip == "" {
		r.skip = fmt.Sprintf("%s holds the text \"${\", which Codex passes as is but mcpgen.toml would read as a variable reference (it has no escape for it)", dottedKey(key))
	}
	if text == "" {
		return nil
	}
	return manifest.Template{{Text: text}}
}

func (r *reader) str(key []string, v any) string {
	s, ok := v.(string)
	if !ok {
		r.errorf(key, "%q must be a string", dottedKey(key))
	}
	return s
}

func (r *reader) strs(key []string, v any) []string {
	list, ok := v.([]any)
	if !ok {
		r.errorf(key, "%q must be an array of strings", dottedKey(key))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			r.errorf(append(key, fmt.Sprintf("[%d]", i)), "%q must hold only strings", dottedKey(key))
			continue
		}
		out = append(out, s)
	}
	return out
}

type keyValue struct {
	Name  string
	Value any
}

// table returns a table's entries in the order the file writes them (the
// server's own table when key is nil).
func (r *reader) table(key []string, v any) []keyValue {
	t, ok := v.(map[string]any)
	if !ok {
		r.errorf(key, "%q must be a table", dottedKey(key))
		return nil
	}
	out := make([]keyValue, 0, len(t))
	for k, e := range t {
		out = append(out, keyValue{k, e})
	}
	base := append([]string{"mcp_servers", r.name}, key...)
	slices.SortFunc(out, func(a, b keyValue) int {
		pa, okA := r.ix.keys[strings.Join(append(slices.Clone(base), a.Name), "\x00")]
		pb, okB := r.ix.keys[strings.Join(append(slices.Clone(base), b.Name), "\x00")]
		if okA && okB && pa != pb {
			return pa - pb
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// duration reads a timeout in unit (Codex's seconds, or milliseconds).
func (r *reader) duration(imp *providers.ImportedServer, key []string, v any, unit time.Duration) time.Duration {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		r.errorf(key, "%q must be a number", key[0])
		return 0
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f*float64(unit) > math.MaxInt64/2 {
		r.errorf(key, "%q must be a positive number: Codex rejects %v too", key[0], v)
		return 0
	}
	d := time.Duration(f * float64(unit))
	if d <= 0 {
		imp.Note("%s = %v left out: mcpgen needs a positive duration, and uses its default.", key[0], v)
	}
	return max(d, 0)
}

func dottedKey(key []string) string {
	var b strings.Builder
	for i, k := range key {
		if i > 0 && !strings.HasPrefix(k, "[") {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}
