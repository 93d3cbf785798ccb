package manifest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

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
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, Errors{{File: file, Pos: Position{line, col}, Msg: "invalid TOML: " + de.Error()}}
		}
		return nil, fmt.Errorf("%s: invalid TOML: %w", file, err)
	}
	d := &decoder{file: file, pos: indexPositions(data)}
	m := d.manifest(raw)
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, d.errs
	}
	m.File, m.Dir, m.pos = file, dir, d.pos
	return m, nil
}

var (
	serverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	ownerName  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	prefixName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	toolName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
)

// decoder turns the generic map that go-toml decodes into the model, and
// collects every problem with its position instead of stopping at the first.
type decoder struct {
	file string
	pos  positions
	errs Errors
}

func (d *decoder) errorAt(at Position, path []string, format string, args ...any) {
	e := &Error{File: d.file, Pos: at, Msg: fmt.Sprintf(format, args...)}
	if len(path) >= 2 && path[0] == "servers" {
		e.Server, e.Key = path[1], dotted(path[2:])
	} else {
		e.Key = dotted(path)
	}
	d.errs = append(d.errs, e)
}

// keyError reports a problem with a key itself (unknown, not allowed here).
func (d *decoder) keyError(path []string, format string, args ...any) {
	d.errorAt(d.pos.key(path), path, format, args...)
}

// valueError reports a problem with a key's value.
func (d *decoder) valueError(path []string, format string, args ...any) {
	d.errorAt(d.pos.value(path), path, format, args...)
}

// name is how messages refer to the key at path: relative to its server.
func name(path []string) string {
	if len(path) >= 2 && path[0] == "servers" {
		path = path[2:]
	}
	return dotted(path)
}

func child(path []string, key string) []string {
	return append(path[:len(path):len(path)], key)
}

// sortedKeys returns t's keys in the order they appear in the file.
func (d *decoder) sortedKeys(path []string, t map[string]any) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		oa, okA := d.pos.order[pathKey(child(path, a))]
		ob, okB := d.pos.order[pathKey(child(path, b))]
		if okA && okB && oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	return keys
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		_ = v
		return "a date or time"
	}
}

func (d *decoder) table(path []string, v any) (map[string]any, bool) {
	t, ok := v.(map[string]any)
	if !ok {
		d.valueError(path, "%q must be a table, not %s", name(path), describe(v))
	}
	return t, ok
}

func (d *decoder) str(path []string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.valueError(path, "%q must be a string, not %s", name(path), describe(v))
	}
	return s, ok
}

func (d *decoder) boolean(path []string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		d.valueError(path, "%q must be true or false, not %s", name(path), describe(v))
	}
	return b, ok
}

func (d *decoder) strs(path []string, v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		if s, isStr := v.(string); isStr {
			d.valueError(path, "%q must be an array of strings: write [%q]", name(path), s)
		} else {
			d.valueError(path, "%q must be an array of strings, not %s", name(path), describe(v))
		}
		return nil, false
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, isStr := e.(string)
		if !isStr {
			d.valueError(child(path, indexKey(i)), "%q must hold only strings; element %d is %s", name(path), i+1, describe(e))
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func (d *decoder) template(path []string, s string) Template {
	t, err := ParseTemplate(s)
	if err != nil {
		d.valueError(path, "%q: %v", name(path), err)
	}
	return t
}

func (d *decoder) templates(path []string, v any) []Template {
	ss, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	out := make([]Template, len(ss))
	for i, s := range ss {
		out[i] = d.template(child(path, indexKey(i)), s)
	}
	return out
}

// vars decodes a table of string templates, such as env or headers.
func (d *decoder) vars(path []string, v any, valid *regexp.Regexp, what string) []Var {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	var out []Var
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		if !valid.MatchString(k) {
			d.keyError(p, "%q is not a valid %s", k, what)
			continue
		}
		s, ok := t[k].(string)
		if !ok {
			hint := ""
			switch x := t[k].(type) {
			case int64, float64, bool:
				hint = fmt.Sprintf(" (write \"%v\")", x)
			}
			d.valueError(p, "%q must be a string, not %s%s", name(p), describe(t[k]), hint)
			continue
		}
		out = append(out, Var{Name: k, Value: d.template(p, s)})
	}
	return out
}

func (d *decoder) duration(path []string, v any) time.Duration {
	s, ok := v.(string)
	if !ok {
		if n, isInt := v.(int64); isInt {
			d.valueError(path, "%q must be a duration such as \"%ds\"", name(path), n)
		} else {
			d.valueError(path, "%q must be a duration such as \"30s\" or \"2m\", not %s", name(path), describe(v))
		}
		return 0
	}
	dur, err := time.ParseDuration(s)
	if err != nil || dur <= 0 {
		d.valueError(path, "%q: %q is not a positive duration (write \"30s\", \"1m30s\", \"500ms\")", name(path), s)
		return 0
	}
	return dur
}

func (d *decoder) unknownKey(path []string, known []string) {
	d.keyError(path, "unknown key %q%s", path[len(path)-1], suggest(path[len(path)-1], known))
}

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

// The keys a server table may hold, by kind.
var (
	kindKeys    = []string{"command", "builtin", "tools", "url"}
	commonKeys  = []string{"description", "enabled", "providers", "env", "cwd", "startup_timeout", "tool_timeout", "context", "enabled_tools", "disabled_tools", "start", "idle_timeout", "memory_max", "cpu_max"}
	stdioOnly   = []string{"env", "cwd", "context", "memory_max", "cpu_max"}
	keysOfKind  = map[Kind][]string{KindCommand: {"command", "args", "build", "watch"}, KindBuiltin: {"builtin", "read_only", "protect"}, KindDeclared: {"tools"}, KindRemote: {"url", "headers", "bearer_token_env"}}
	serverKeys  = slices.Concat(commonKeys, keysOfKind[KindCommand], keysOfKind[KindBuiltin], keysOfKind[KindDeclared], keysOfKind[KindRemote])
	kindOfKey   = map[string]Kind{"command": KindCommand, "builtin": KindBuiltin, "tools": KindDeclared, "url": KindRemote}
	builtinKeys = map[string][]string{"files": {"read_only", "protect"}}
)

func (d *decoder) server(path []string, v any, varNames []string) *Server {
	n := path[1]
	switch {
	case !serverName.MatchString(n):
		d.keyError(path, "server name %q is not valid: use 1 to 64 letters, digits, _ or -", n)
		return nil
	case slices.Contains(ReservedNames, n):
		d.keyError(path, "the name is reserved by Claude Code; choose another")
		return nil
	}
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	s := &Server{Name: n, Enabled: true, Pos: d.pos.key(path)}
	keys := d.sortedKeys(path, t)

	// The kind first: it decides which other keys are allowed.
	var kindKey string
	typo := false
	for _, k := range keys {
		if !slices.Contains(serverKeys, k) {
			d.unknownKey(child(path, k), serverKeys)
			if c, ok := closest(k, serverKeys); ok && slices.Contains(kindKeys, c) {
				typo = true // "no kind" would only repeat this error
			}
			continue
		}
		kk, isKind := kindOfKey[k]
		if !isKind {
			continue
		}
		if kindKey != "" {
			d.keyError(child(path, k), "%q cannot be used with %q: a server is exactly one kind (command, builtin, tools or url)", k, kindKey)
			continue
		}
		kindKey, s.Kind = k, kk
	}
	if kindKey == "" {
		if !typo {
			d.keyError(path, "no kind: set one of \"command\" (a stdio process), \"builtin\", \"tools\" (declared tools) or \"url\" (remote)")
		}
		return nil
	}

	for _, k := range keys {
		p := child(path, k)
		val := t[k]
		if !slices.Contains(serverKeys, k) || k != kindKey && slices.Contains(kindKeys, k) {
			continue // reported above
		}
		allowed := slices.Contains(keysOfKind[s.Kind], k) || slices.Contains(commonKeys, k) && !(s.Kind == KindRemote && slices.Contains(stdioOnly, k))
		if !allowed {
			d.keyError(p, "%q is not allowed with %q", k, kindKey)
			continue
		}
		switch k {
		case "description":
			s.Description, _ = d.str(p, val)
		case "enabled":
			s.Enabled, _ = d.boolean(p, val)
		case "providers":
			s.Providers = d.providers(p, val)
		case "env":
			s.Env = d.vars(p, val, varName, "environment variable name (letters, digits and _, not starting with a digit)")
		case "cwd":
			if str, ok := d.str(p, val); ok {
				s.Cwd = d.template(p, str)
			}
		case "startup_timeout":
			s.StartupTimeout = d.duration(p, val)
		case "tool_timeout":
			s.ToolTimeout = d.duration(p, val)
		case "context":
			s.Context = d.contextSelect(p, val, varNames)
		case "enabled_tools":
			s.EnabledTools = d.toolNames(p, val)
			if s.EnabledTools == nil {
				s.EnabledTools = []string{}
			}
		case "disabled_tools":
			s.DisabledTools = d.toolNames(p, val)
		case "start":
			if str, ok := d.str(p, val); ok {
				switch str {
				case "eager":
				case "lazy":
					s.Lazy = true
				default:
					d.valueError(p, "\"start\" must be \"eager\" or \"lazy\", not %q", str)
				}
			}
		case "idle_timeout":
			s.IdleTimeout = d.duration(p, val)
		case "memory_max":
			s.MemoryMax = d.memory(p, val)
		case "cpu_max":
			s.CPUMax = d.cpus(p, val)
		case "protect":
			s.Protect = d.globs(p, val)
			if s.Protect == nil {
				s.Protect = []string{}
			}
		case "command":
			if str, ok := d.str(p, val); ok {
				if strings.TrimSpace(str) == "" {
					d.valueError(p, "\"command\" is empty: name the program to run")
				}
				s.Command = d.template(p, str)
			}
		case "args":
			s.Args = d.templates(p, val)
		case "build":
			if argv, ok := d.strs(p, val); ok {
				if len(argv) == 0 || argv[0] == "" {
					d.valueError(p, "\"build\" is empty: give the build command as an argv, e.g. [\"go\", \"build\", \"-o\", \"bin/x\", \".\"]")
				}
				s.Build = argv
			}
		case "watch":
			s.Watch = d.globs(p, val)
		case "builtin":
			if str, ok := d.str(p, val); ok {
				if !slices.Contains(Builtins, str) {
					d.valueError(p, "unknown builtin %q%s; mcpgen has: %s", str, suggest(str, Builtins), strings.Join(Builtins, ", "))
				}
				s.Builtin = str
			}
		case "read_only":
			s.ReadOnly, _ = d.boolean(p, val)
		case "tools":
			s.Tools = d.tools(p, val)
		case "url":
			if str, ok := d.str(p, val); ok {
				s.URL = d.template(p, str)
				d.checkURL(p, s.URL)
			}
		case "headers":
			s.Headers = d.vars(p, val, headerName, "HTTP header name")
		case "bearer_token_env":
			if str, ok := d.str(p, val); ok {
				if !varName.MatchString(str) {
					d.valueError(p, "\"bearer_token_env\" names the variable that holds the token, e.g. \"DOCS_TOKEN\"; %q is not a variable name", str)
				}
				s.BearerTokenEnv = str
			}
		}
	}
	if _, set := t["protect"]; !set && s.Kind == KindBuiltin && s.Builtin == "files" {
		s.Protect = slices.Clone(DefaultProtect)
	}
	d.checkServer(path, s, t)
	return s
}

// checkServer applies the rules that involve more than one key.
func (d *decoder) checkServer(path []string, s *Server, t map[string]any) {
	if s.Kind == KindBuiltin && slices.Contains(Builtins, s.Builtin) {
		for _, k := range keysOfKind[KindBuiltin][1:] {
			if _, set := t[k]; set && !slices.Contains(builtinKeys[s.Builtin], k) {
				d.keyError(child(path, k), "%q is not an option of builtin %q", k, s.Builtin)
			}
		}
	}
	if s.Kind == KindDeclared {
		var declared []string
		for _, tool := range s.Tools {
			declared = append(declared, tool.Name)
		}
		for _, key := range []string{"enabled_tools", "disabled_tools"} {
			names := s.EnabledTools
			if key == "disabled_tools" {
				names = s.DisabledTools
			}
			for i, n := range names {
				if !slices.Contains(declared, n) {
					d.valueError(child(child(path, key), indexKey(i)), "%q: the server declares no tool %q%s", key, n, suggest(n, declared))
				}
			}
		}
	}
	if s.Kind == KindRemote && s.BearerTokenEnv != "" {
		for _, h := range s.Headers {
			if strings.EqualFold(h.Name, "Authorization") {
				d.keyError(child(child(path, "headers"), h.Name), "an Authorization header conflicts with \"bearer_token_env\": keep one of them")
			}
		}
	}
}

func (d *decoder) providers(path []string, v any) []string {
	ps, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	if len(ps) == 0 {
		d.valueError(path, "\"providers\" is empty: remove it to emit for every provider, or set enabled = false")
	}
	for i, p := range ps {
		if !slices.Contains(Providers, p) {
			d.valueError(child(path, indexKey(i)), "unknown provider %q%s; use %s", p, suggest(p, Providers), strings.Join(Providers, ", "))
		}
	}
	return ps
}

func (d *decoder) contextSelect(path []string, v any, varNames []string) ContextSelect {
	if b, ok := v.(bool); ok {
		return ContextSelect{None: !b}
	}
	names, ok := v.([]any)
	if !ok {
		d.valueError(path, "\"context\" must be true, false or a list of variable names, not %s", describe(v))
		return ContextSelect{}
	}
	known := append([]string{VarWorkspaceID, VarWorkspaceDir, VarUserID}, varNames...)
	only := []string{}
	for i, e := range names {
		s, isStr := e.(string)
		if !isStr || !slices.Contains(known, s) {
			d.valueError(child(path, indexKey(i)), "%v is not a context variable%s; the context is %s", e, suggest(fmt.Sprint(e), known), strings.Join(known, ", "))
			continue
		}
		only = append(only, s)
	}
	return ContextSelect{Only: only}
}

func (d *decoder) globs(path []string, v any) []string {
	gs, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	for i, g := range gs {
		if err := CheckGlob(g); err != nil {
			d.valueError(child(path, indexKey(i)), "%q: %v", name(path), err)
		}
	}
	return gs
}

func (d *decoder) checkURL(path []string, t Template) {
	s, literal := t.Literal()
	if !literal {
		return // checked once expanded
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.valueError(path, "\"url\" must be an absolute http or https URL, such as \"https://mcp.example.com/mcp\"")
	}
}

func (d *decoder) tools(path []string, v any) []*Tool {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	if len(t) == 0 {
		d.valueError(path, "\"tools\" is empty: declare at least one tool, [servers.%s.tools.NAME] with run = [...]", path[1])
	}
	var tools []*Tool
	for _, n := range d.sortedKeys(path, t) {
		if tool := d.tool(child(path, n), t[n]); tool != nil {
			tools = append(tools, tool)
		}
	}
	return tools
}

func (d *decoder) tool(path []string, v any) *Tool {
	n := path[len(path)-1]
	if !toolName.MatchString(n) {
		d.keyError(path, "tool name %q is not valid: use 1 to 64 letters, digits, _ or -", n)
		return nil
	}
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	tool := &Tool{Name: n, Pos: d.pos.key(path)}
	known := []string{"description", "run", "args", "timeout"}
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		switch k {
		case "description":
			tool.Description, _ = d.str(p, t[k])
		case "run":
			tool.Run = d.templates(p, t[k])
			if _, ok := t[k].([]any); ok && (len(tool.Run) == 0 || tool.Run[0].String() == "") {
				d.valueError(p, "\"run\" is empty: give the command as an argv, e.g. [\"git\", \"status\"]")
			}
		case "args":
			tool.Args = d.args(p, t[k])
		case "timeout":
			tool.Timeout = d.duration(p, t[k])
		default:
			d.unknownKey(p, known)
		}
	}
	if _, ok := t["run"]; !ok {
		d.keyError(path, "tool %q has no \"run\": give the command to run as an argv", n)
	}
	for _, a := range tool.Args {
		if !usesArg(tool.Run, a.Name) {
			d.keyError(child(child(path, "args"), a.Name), "argument %q is not used: put {%s} in an element of \"run\"", a.Name, a.Name)
		}
	}
	return tool
}

// usesArg reports whether {name} appears in one of the argv's elements.
func usesArg(run []Template, name string) bool {
	for _, t := range run {
		if strings.Contains(t.String(), "{"+name+"}") {
			return true
		}
	}
	return false
}

var argTypes = []string{TypeString, TypeInteger, TypeNumber, TypeBoolean}

func (d *decoder) args(path []string, v any) []*Arg {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	var args []*Arg
	for _, n := range d.sortedKeys(path, t) {
		p := child(path, n)
		if !varName.MatchString(n) {
			d.keyError(p, "argument name %q is not valid: use letters, digits and _, not starting with a digit", n)
			continue
		}
		if a := d.arg(p, t[n]); a != nil {
			args = append(args, a)
		}
	}
	return args
}

func (d *decoder) arg(path []string, v any) *Arg {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	a := &Arg{Name: path[len(path)-1], Type: TypeString}
	if tv, ok := t["type"]; ok {
		if s, ok := d.str(child(path, "type"), tv); ok {
			if !slices.Contains(argTypes, s) {
				d.valueError(child(path, "type"), "unknown type %q%s; use %s", s, suggest(s, argTypes), strings.Join(argTypes, ", "))
				return nil
			}
			a.Type = s
		}
	}
	required, hasRequired := true, false
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		switch k {
		case "type":
		case "description":
			a.Description, _ = d.str(p, t[k])
		case "default":
			a.Default, _ = d.argValue(p, a.Type, t[k])
		case "required":
			required, _ = d.boolean(p, t[k])
			hasRequired = true
		case "allow_dash":
			a.AllowDash, _ = d.boolean(p, t[k])
			if a.Type != TypeString {
				d.keyError(p, "\"allow_dash\" applies to string arguments; %q is %s", a.Name, withArticle(a.Type))
			}
		case "enum":
			vals, ok := t[k].([]any)
			if !ok || len(vals) == 0 {
				d.valueError(p, "\"enum\" must be a non-empty array of allowed values")
				continue
			}
			for i, e := range vals {
				if x, ok := d.argValue(child(p, indexKey(i)), a.Type, e); ok {
					a.Enum = append(a.Enum, x)
				}
			}
		default:
			d.unknownKey(p, []string{"type", "description", "default", "required", "enum", "allow_dash"})
		}
	}
	a.Required = required && a.Default == nil
	if hasRequired && required && a.Default != nil {
		d.keyError(child(path, "required"), "required = true contradicts the default: remove one of them")
	}
	if a.Default != nil && a.Enum != nil && !slices.Contains(a.Enum, a.Default) {
		d.valueError(child(path, "default"), "the default %v is not one of \"enum\"", a.Default)
	}
	return a
}

// argValue checks that a default or enum value has the argument's type and
// returns it as a string, int64, float64 or bool.
func (d *decoder) argValue(path []string, typ string, v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if typ == TypeString {
			return x, true
		}
	case int64:
		switch typ {
		case TypeInteger:
			return x, true
		case TypeNumber:
			return float64(x), true
		}
	case float64:
		if typ == TypeNumber {
			return x, true
		}
	case bool:
		if typ == TypeBoolean {
			return x, true
		}
	}
	d.valueError(path, "%v is %s, but the argument's type is %s", v, describe(v), typ)
	return nil, false
}

func withArticle(typ string) string {
	if typ == TypeInteger {
		return "an integer"
	}
	return "a " + typ
}

// toolNames decodes enabled_tools or disabled_tools: tool names.
func (d *decoder) toolNames(path []string, v any) []string {
	names, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	for i, n := range names {
		if n == "" || len(n) > 128 {
			d.valueError(child(path, indexKey(i)), "%q: %q is not a tool name", name(path), n)
		}
	}
	return names
}

// memory decodes memory_max: bytes as an integer, or a string with a unit
// (K, M, G, T, each 1024 of the one before, as systemd reads them; "MiB"
// and "MB" are read the same).
func (d *decoder) memory(path []string, v any) int64 {
	const hint = "write a size such as \"512M\" or \"2G\""
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case string:
		var err error
		if n, err = parseSize(x); err != nil {
			d.valueError(path, "\"memory_max\": %q is not a size: %s", x, hint)
			return 0
		}
	default:
		d.valueError(path, "\"memory_max\" must be a size, not %s: %s", describe(v), hint)
		return 0
	}
	if n < 1<<20 {
		d.valueError(path, "\"memory_max\" is below 1M, too little for any server: %s", hint)
		return 0
	}
	return n
}

func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num := strings.TrimRight(s, "KMGTiBkmgtb")
	unit := strings.ToUpper(strings.TrimSpace(s[len(num):]))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	if !ok {
		return 0, errors.New("unknown unit")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || f <= 0 || f*float64(int64(1)<<sh) > 1<<62 {
		return 0, errors.New("not a size")
	}
	return int64(f * float64(int64(1)<<sh)), nil
}

// cpus decodes cpu_max: how many CPUs the server may use, such as 0.5 or 2.
func (d *decoder) cpus(path []string, v any) float64 {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		d.valueError(path, "\"cpu_max\" must be a number of CPUs such as 0.5 or 2, not %s", describe(v))
		return 0
	}
	if !(f >= 0.01 && f <= 1024) {
		d.valueError(path, "\"cpu_max\" must be between 0.01 and 1024 CPUs, not %v", f)
		return 0
	}
	return f
}
