package manifest

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

func (d *decoder) server(path []string, v any) *Server {
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
	kindKey, guessed := d.kind(path, t, keys)
	if kindKey == "" {
		return nil
	}
	kindSpec, _ := serverKeys.find(kindKey)
	s.Kind = kindSpec.kinds[0]

	for _, k := range keys {
		p := child(path, k)
		spec, known := serverKeys.find(k)
		if !known || spec.kind && k != kindKey {
			continue // reported by kind
		}
		if !spec.allows(s.Kind) {
			d.keyError(p, "%q is not allowed with %q", k, kindKey)
			continue
		}
		spec.decode(d, p, t[k], s)
	}
	if _, set := t["protect"]; !set && s.Kind == KindBuiltin && s.Builtin == "files" {
		s.Protect = slices.Clone(DefaultProtect)
	}
	d.checkServer(path, s, t)
	if guessed {
		// Checked as the kind it most likely is, so that one misspelled
		// key does not hide the others' problems; not a server.
		return nil
	}
	return s
}

// kind finds the key that makes the server's kind, reporting unknown keys
// and a second kind. When there is none, it reports that and returns the
// kind key the server most likely meant, guessed, so that the other keys
// are still checked: the one a misspelled key stands for ("comand"), else
// the one the keys of a single kind point to (args: command).
func (d *decoder) kind(path []string, t map[string]any, keys []string) (kindKey string, guessed bool) {
	typo := ""
	for _, k := range keys {
		spec, known := serverKeys.find(k)
		if !known {
			names := serverKeys.names()
			d.unknownKey(child(path, k), names)
			if c, ok := closest(k, names); ok && typo == "" {
				if cs, _ := serverKeys.find(c); cs.kind {
					typo = c
				}
			}
			continue
		}
		if !spec.kind {
			continue
		}
		if kindKey != "" {
			d.keyError(child(path, k), "%q cannot be used with %q: a server is exactly one kind (command, builtin, tools or url)", k, kindKey)
			continue
		}
		kindKey = k
	}
	if kindKey != "" {
		return kindKey, false
	}
	if typo != "" {
		return typo, true // the unknown key's error says it
	}
	e := d.keyError(path, "no kind: set one of \"command\" (a stdio process), \"builtin\", \"tools\" (declared tools) or \"url\" (remote)")
	for _, k := range keys {
		spec, known := serverKeys.find(k)
		if known && len(spec.kinds) == 1 {
			for _, ks := range serverKeys {
				if ks.kind && ks.kinds[0] == spec.kinds[0] {
					e.Msg += fmt.Sprintf("; %q suggests %q", k, ks.name)
					e.Suggestion = ks.name
					return ks.name, true
				}
			}
		}
	}
	return "", false
}

// checkServer applies the rules that involve more than one key.
func (d *decoder) checkServer(path []string, s *Server, t map[string]any) {
	if s.Kind == KindBuiltin && slices.Contains(Builtins, s.Builtin) {
		for _, spec := range serverKeys {
			if _, set := t[spec.name]; set && spec.builtin != "" && spec.builtin != s.Builtin {
				d.keyError(child(path, spec.name), "%q is not an option of builtin %q", spec.name, s.Builtin)
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
					d.valueError(child(child(path, key), indexKey(i)), "%q: the server declares no tool %q%s", key, n, suggest(n, declared)).Suggestion = closestOr(n, declared)
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
			d.valueError(child(path, indexKey(i)), "unknown provider %q%s; use %s", p, suggest(p, Providers), strings.Join(Providers, ", ")).Suggestion = closestOr(p, Providers)
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
			d.valueError(child(path, indexKey(i)), "%v is not a context variable%s; the context is %s", e, suggest(fmt.Sprint(e), known), strings.Join(known, ", ")).Suggestion = closestOr(fmt.Sprint(e), known)
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
