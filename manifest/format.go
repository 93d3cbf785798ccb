package manifest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Comments are what Format writes besides the manifest's values. Keys are
// dotted paths of names as written in the manifest, joined by ".":
// "servers.github" for a server's table, "servers.github.env.TOKEN" for one
// of its keys.
type Comments struct {
	// Head opens the file, one comment line each ("" for a bare "#").
	Head []string
	// Above holds the lines written above a server's table or a key.
	Above map[string][]string
	// Trail holds a short comment written at the end of a key's line.
	Trail map[string]string
}

// Format writes m as an mcpgen.toml that Parse reads back to the same model:
// the top-level keys, [workspace], [session] (and [session.auth]),
// [gateway], [sandbox], then every server in order, each as one
// [servers.NAME] table whose env and headers are dotted keys (so that each
// may carry its own comment), then its [servers.NAME.sandbox] and its
// declared tools as [servers.NAME.tools.TOOL] tables. Defaults are left
// out.
//
// A literal text that holds "${" cannot be written: the manifest would read
// it as a reference, and it has no escape. Format reports every such value
// by its key path, and writes nothing.
func Format(m *Manifest, c *Comments) ([]byte, error) {
	if c == nil {
		c = &Comments{}
	}
	f := &formatter{c: c}
	for _, line := range c.Head {
		f.comment(line)
	}
	if len(c.Head) > 0 {
		f.b.WriteByte('\n')
	}
	f.top(m)
	for _, s := range m.Servers {
		f.server(s)
	}
	if len(f.errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(f.errs, "; "))
	}
	return []byte(f.b.String()), nil
}

// formatter writes one manifest, and collects the values it cannot write.
type formatter struct {
	b    strings.Builder
	c    *Comments
	errs []string
}

func (f *formatter) comment(line string) {
	line = strings.ReplaceAll(line, "\n", " ")
	if line == "" {
		f.b.WriteString("#\n")
		return
	}
	f.b.WriteString("# ")
	f.b.WriteString(line)
	f.b.WriteByte('\n')
}

// header starts a table, with a blank line before it unless the file is
// still empty, and the comments written above it.
func (f *formatter) header(path string, key ...string) {
	if f.b.Len() > 0 {
		f.b.WriteByte('\n')
	}
	for _, line := range f.c.Above[path] {
		f.comment(line)
	}
	f.b.WriteByte('[')
	for i, k := range key {
		if i > 0 {
			f.b.WriteByte('.')
		}
		f.b.WriteString(TOMLKey(k))
	}
	f.b.WriteString("]\n")
}

// line writes key = value, where path is the key's full path, for the
// comments attached to it.
func (f *formatter) line(path, key, value string) {
	for _, line := range f.c.Above[path] {
		f.comment(line)
	}
	f.b.WriteString(key)
	f.b.WriteString(" = ")
	f.b.WriteString(value)
	if t := f.c.Trail[path]; t != "" {
		f.b.WriteString("  # ")
		f.b.WriteString(strings.ReplaceAll(t, "\n", " "))
	}
	f.b.WriteByte('\n')
}

// template returns t as a TOML string, or records why it cannot.
func (f *formatter) template(path string, t Template) string {
	for _, s := range t {
		if s.Ref == "" && strings.Contains(s.Text, "${") {
			f.errs = append(f.errs, fmt.Sprintf("%s: the text %q would read as a reference, and mcpgen.toml has no escape for \"${\"", path, s.Text))
		}
	}
	return formatString(t.String())
}

func (f *formatter) templates(path string, ts []Template) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = f.template(path+indexKey(i), t)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// vars writes env or headers as dotted keys: name.KEY = "value".
func (f *formatter) vars(path, name string, vars []Var) {
	for _, v := range vars {
		p := path + "." + name + "." + v.Name
		f.line(p, name+"."+TOMLKey(v.Name), f.template(p, v.Value))
	}
}

func (f *formatter) top(m *Manifest) {
	f.line("version", "version", strconv.Itoa(max(m.Version, 1)))
	if m.Name != "" {
		f.line("name", "name", formatString(m.Name))
	}
	if m.Prefix != "" {
		f.line("prefix", "prefix", formatString(m.Prefix))
	}
	w := m.Workspace
	if len(w.Dir) > 0 || len(w.User) > 0 || len(w.Vars) > 0 {
		f.header("workspace", "workspace")
		if len(w.Dir) > 0 {
			f.line("workspace.dir", "dir", f.template("workspace.dir", w.Dir))
		}
		if len(w.User) > 0 {
			f.line("workspace.user", "user", f.template("workspace.user", w.User))
		}
		f.vars("workspace", "vars", w.Vars)
	}
	f.session(&m.Session)
	g := m.Gateway
	prefix := g.Prefix != "" && g.Prefix != GatewayPrefixConflicts
	tools := g.Tools != "" && g.Tools != GatewayToolsAll
	if prefix || tools || g.Pin != nil || g.SearchReveal {
		f.header("gateway", "gateway")
	}
	if prefix {
		f.line("gateway.prefix", "prefix", formatString(g.Prefix))
	}
	if tools {
		f.line("gateway.tools", "tools", formatString(g.Tools))
	}
	if g.Pin != nil {
		f.line("gateway.pin", "pin", formatStrings(g.Pin))
	}
	if g.SearchReveal {
		f.line("gateway.search_reveal", "search_reveal", "true")
	}
	f.sandbox("sandbox", []string{"sandbox"}, m.SandboxDefaults)
}

// sandbox writes a [sandbox] or [servers.NAME.sandbox] table: the keys it
// sets, nothing when it is absent. An empty table is kept, so that what
// the file says survives a round trip.
func (f *formatter) sandbox(path string, header []string, r *SandboxRules) {
	if r == nil {
		return
	}
	f.header(path, header...)
	key := func(k string) string { return path + "." + k }
	if r.Enabled != nil {
		f.line(key("enabled"), "enabled", strconv.FormatBool(*r.Enabled))
	}
	if r.Read != nil {
		f.line(key("read"), "read", f.templates(key("read"), r.Read))
	}
	if r.Write != nil {
		f.line(key("write"), "write", f.templates(key("write"), r.Write))
	}
	if n := r.Network; n != nil {
		if n.Mode == NetworkHosts {
			f.line(key("network"), "network", formatStrings(n.Hosts))
		} else {
			f.line(key("network"), "network", formatString(n.Mode))
		}
	}
	if r.Enforce != "" {
		f.line(key("enforce"), "enforce", formatString(r.Enforce))
	}
}

// session writes [session], and [session.auth] after it.
func (f *formatter) session(s *Session) {
	if s.IdleExit > 0 || s.Listen != "" || s.TLSCert != "" || s.TLSKey != "" || s.SessionTimeout > 0 || s.Metrics != "" || s.DrainTimeout > 0 || s.Auth != nil {
		f.header("session", "session")
	}
	if s.IdleExit > 0 {
		f.line("session.idle_exit", "idle_exit", formatDuration(s.IdleExit))
	}
	for _, kv := range [...]struct{ key, value string }{{"listen", s.Listen}, {"tls_cert", s.TLSCert}, {"tls_key", s.TLSKey}} {
		if kv.value != "" {
			f.line("session."+kv.key, kv.key, formatString(kv.value))
		}
	}
	if s.SessionTimeout > 0 {
		f.line("session.session_timeout", "session_timeout", formatDuration(s.SessionTimeout))
	}
	if s.Metrics != "" {
		f.line("session.metrics", "metrics", formatString(s.Metrics))
	}
	if s.DrainTimeout > 0 {
		f.line("session.drain_timeout", "drain_timeout", formatDuration(s.DrainTimeout))
	}
	a := s.Auth
	if a == nil {
		return
	}
	f.header("session.auth", "session", "auth")
	for _, kv := range [...]struct{ key, value string }{{"token_env", a.TokenEnv}, {"tokens_file", a.TokensFile}, {"issuer", a.Issuer}, {"audience", a.Audience}, {"jwks_url", a.JWKSURL}} {
		if kv.value != "" {
			f.line("session.auth."+kv.key, kv.key, formatString(kv.value))
		}
	}
	if a.RequiredScopes != nil {
		f.line("session.auth.required_scopes", "required_scopes", formatStrings(a.RequiredScopes))
	}
}

func (f *formatter) server(s *Server) {
	p := "servers." + s.Name
	key := func(k string) string { return p + "." + k }
	f.header(p, "servers", s.Name)
	if s.Description != "" {
		f.line(key("description"), "description", formatString(s.Description))
	}
	switch s.Kind {
	case KindCommand:
		f.line(key("command"), "command", f.template(key("command"), s.Command))
		if len(s.Args) > 0 {
			f.line(key("args"), "args", f.templates(key("args"), s.Args))
		}
		if s.Build != nil {
			f.line(key("build"), "build", formatStrings(s.Build))
		}
		if s.Watch != nil {
			f.line(key("watch"), "watch", formatStrings(s.Watch))
		}
	case KindBuiltin:
		f.line(key("builtin"), "builtin", formatString(s.Builtin))
		if s.ReadOnly {
			f.line(key("read_only"), "read_only", "true")
		}
		if s.Protect != nil && !slices.Equal(s.Protect, DefaultProtect) {
			f.line(key("protect"), "protect", formatStrings(s.Protect))
		}
	case KindRemote:
		f.line(key("url"), "url", f.template(key("url"), s.URL))
		if s.BearerTokenEnv != "" {
			f.line(key("bearer_token_env"), "bearer_token_env", formatString(s.BearerTokenEnv))
		}
		f.vars(p, "headers", s.Headers)
	}
	f.vars(p, "env", s.Env)
	if len(s.Cwd) > 0 {
		f.line(key("cwd"), "cwd", f.template(key("cwd"), s.Cwd))
	}
	switch {
	case s.Context.None:
		f.line(key("context"), "context", "false")
	case s.Context.Only != nil:
		f.line(key("context"), "context", formatStrings(s.Context.Only))
	}
	if !s.Enabled {
		f.line(key("enabled"), "enabled", "false")
	}
	if s.Providers != nil {
		f.line(key("providers"), "providers", formatStrings(s.Providers))
	}
	if s.Scope != "" {
		f.line(key("scope"), "scope", formatString(s.Scope))
	}
	if s.StartupTimeout > 0 {
		f.line(key("startup_timeout"), "startup_timeout", formatDuration(s.StartupTimeout))
	}
	if s.ToolTimeout > 0 {
		f.line(key("tool_timeout"), "tool_timeout", formatDuration(s.ToolTimeout))
	}
	if s.InputTimeout > 0 {
		f.line(key("input_timeout"), "input_timeout", formatDuration(s.InputTimeout))
	}
	if s.EnabledTools != nil {
		f.line(key("enabled_tools"), "enabled_tools", formatStrings(s.EnabledTools))
	}
	if s.DisabledTools != nil {
		f.line(key("disabled_tools"), "disabled_tools", formatStrings(s.DisabledTools))
	}
	if s.Lazy {
		f.line(key("start"), "start", `"lazy"`)
	}
	if s.IdleTimeout > 0 {
		f.line(key("idle_timeout"), "idle_timeout", formatDuration(s.IdleTimeout))
	}
	if s.MemoryMax > 0 {
		f.line(key("memory_max"), "memory_max", formatSize(s.MemoryMax))
	}
	if s.CPUMax > 0 {
		f.line(key("cpu_max"), "cpu_max", strconv.FormatFloat(s.CPUMax, 'f', -1, 64))
	}
	f.sandbox(key("sandbox"), []string{"servers", s.Name, "sandbox"}, s.Sandbox)
	for _, t := range s.Tools {
		f.tool(p, s.Name, t)
	}
}

func (f *formatter) tool(server, serverName string, t *Tool) {
	p := server + ".tools." + t.Name
	key := func(k string) string { return p + "." + k }
	f.header(p, "servers", serverName, "tools", t.Name)
	if t.Description != "" {
		f.line(key("description"), "description", formatString(t.Description))
	}
	f.line(key("run"), "run", f.templates(key("run"), t.Run))
	if t.Timeout > 0 {
		f.line(key("timeout"), "timeout", formatDuration(t.Timeout))
	}
	for _, a := range t.Args {
		var kvs []string
		if a.Type != TypeString {
			kvs = append(kvs, "type = "+formatString(a.Type))
		}
		if a.Description != "" {
			kvs = append(kvs, "description = "+formatString(a.Description))
		}
		if a.Default != nil {
			kvs = append(kvs, "default = "+formatValue(a.Default))
		} else if !a.Required {
			kvs = append(kvs, "required = false")
		}
		if a.Enum != nil {
			vals := make([]string, len(a.Enum))
			for i, v := range a.Enum {
				vals[i] = formatValue(v)
			}
			kvs = append(kvs, "enum = ["+strings.Join(vals, ", ")+"]")
		}
		if a.AllowDash {
			kvs = append(kvs, "allow_dash = true")
		}
		if a.AllowShell {
			kvs = append(kvs, "allow_shell = true")
		}
		f.line(key("args."+a.Name), "args."+TOMLKey(a.Name), "{ "+strings.Join(kvs, ", ")+" }")
	}
}

// TOMLKey writes a bare key when TOML allows one, else a quoted key: what
// everything mcpgen writes in TOML (a manifest, Codex's tables) uses.
func TOMLKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return TOMLString(k)
		}
	}
	return k
}

// TOMLString writes s as a TOML basic string, every control character
// escaped.
func TOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TOMLArray writes strings as a TOML array: ["git", "status"].
func TOMLArray(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = TOMLString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// formatString writes a TOML string: a literal string ('C:\bin') when the
// text has backslashes and nothing a literal string cannot hold, which
// reads better than doubled backslashes; else a basic string.
func formatString(s string) string {
	literal := strings.Contains(s, `\`) && !strings.Contains(s, "'")
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			literal = false
		}
	}
	if literal {
		return "'" + s + "'"
	}
	return TOMLString(s)
}

func formatStrings(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = formatString(s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// formatValue writes a default or enum value of a declared tool's argument:
// a string, int64, float64 or bool.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return formatString(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		switch s {
		case "+Inf":
			return "inf"
		case "-Inf":
			return "-inf"
		case "NaN":
			return "nan"
		}
		if !strings.ContainsAny(s, ".e") {
			s += ".0" // a float, not an integer
		}
		return s
	case bool:
		return strconv.FormatBool(x)
	}
	return formatString(fmt.Sprint(v))
}

// formatDuration writes d as Go writes it, which Parse reads back, without
// the zero units Go adds at the end ("5m", not "5m0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return formatString(s)
}

// formatSize writes bytes with the largest unit that divides them exactly.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n%(1<<u.shift) == 0 {
			return formatString(strconv.FormatInt(n>>u.shift, 10) + u.suffix)
		}
	}
	return strconv.FormatInt(n, 10)
}
