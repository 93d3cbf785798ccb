package manifest

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

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
			s.MemoryMax, s.MemoryMaxPos = d.memory(p, val), d.pos.value(p)
		case "cpu_max":
			s.CPUMax, s.CPUMaxPos = d.cpus(p, val), d.pos.value(p)
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
