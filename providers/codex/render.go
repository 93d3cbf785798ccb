// Package codex writes Codex's MCP server tables, [mcp_servers.NAME] in
// config.toml, and merges them into the user's file in place.
package codex

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "codex"

// Render returns the table of every server of m meant for Codex, in the
// manifest's order. What Codex cannot express itself goes through mcpgen
// (serve, or connect with o.Launcher), which resolves it when Codex starts
// the server.
func Render(m *manifest.Manifest, o providers.Options) ([]Entry, error) {
	o, err := o.WithContext(m)
	if err != nil {
		return nil, err
	}
	if o.GatewayURL != "" {
		// Codex reaches Streamable HTTP itself, and reads the token
		// from its own environment (bearer_token_env_var).
		var w writer
		e := providers.RemoteGateway(o)
		w.remote(e)
		return []Entry{{Name: o.EntryName(m, e.Server), Body: []byte(w.b.String())}}, nil
	}
	if o.Gateway != "" {
		servers := providers.GatewayServers(m, Name, o)
		if len(servers) == 0 {
			return nil, errors.New("no enabled server of the manifest is meant for codex: the gateway would have no tools")
		}
		var w writer
		e := providers.Gateway(m, servers, o)
		w.stdio(e)
		w.timeouts(e.Server)
		return []Entry{{Name: o.EntryName(m, e.Server), Body: []byte(w.b.String())}}, nil
	}
	var entries []Entry
	for _, s := range m.Servers {
		if !o.Meant(s, Name) {
			continue
		}
		entries = append(entries, Entry{Name: o.EntryName(m, s), Body: render(m, s, o)})
	}
	return entries, nil
}

func render(m *manifest.Manifest, s *manifest.Server, o providers.Options) []byte {
	var e *providers.Entry
	switch {
	case o.Launcher && s.Kind.Stdio():
		e = providers.Connect(m, s, o)
	case s.Kind == manifest.KindBuiltin, s.Kind == manifest.KindDeclared:
		e = providers.Serve(m, s, o)
	case s.Kind == manifest.KindCommand:
		e = providers.Native(m, s, o)
		// A project's config names no path of its checkout: serve
		// resolves a relative command or cwd where the agent runs, and
		// the manifest's directory as the workspace. A sandboxed server
		// runs in mcpgen's sandbox.
		if !expressible(e) || o.Scope == providers.ScopeProject && e.InCheckout() || providers.InManifestDir(m, s, o) || providers.Sandboxed(m, s) {
			e = providers.Serve(m, s, o)
		}
	default:
		e = providers.Native(m, s, o)
		// A ${VAR} in the url (an API key in the query), or a header that
		// mixes text and one: Codex sends neither, and a value from the
		// environment is never written. The server is reached through
		// mcpgen, which resolves them when Codex starts it: serve, or the
		// launcher's connect.
		if !remoteExpressible(e) {
			if o.Launcher {
				e = providers.Connect(m, s, o)
			} else {
				e = providers.Serve(m, s, o)
			}
		}
	}
	var w writer
	if s.Kind == manifest.KindRemote && !e.Serve {
		w.remote(e)
	} else {
		w.stdio(e)
	}
	w.timeouts(s)
	// Codex filters tools itself, under the manifest's own key names.
	if s.EnabledTools != nil {
		w.strs("enabled_tools", s.EnabledTools)
	}
	if s.DisabledTools != nil {
		w.strs("disabled_tools", s.DisabledTools)
	}
	if !s.Enabled {
		w.raw("enabled", "false")
	}
	return []byte(w.b.String())
}

// expressible reports whether Codex can run e as it is: Codex expands no
// ${VAR} anywhere, and copies variables from its own environment only under
// their own names (env_vars).
func expressible(e *providers.Entry) bool {
	if !e.Command.IsLiteral() || !e.Cwd.IsLiteral() {
		return false
	}
	for _, a := range e.Args {
		if !a.IsLiteral() {
			return false
		}
	}
	for _, v := range e.Env {
		if _, ok := passedThrough(v); !ok && !v.Value.IsLiteral() {
			return false
		}
	}
	return true
}

// passedThrough reports whether an env entry is NAME = "${NAME}", which
// Codex's env_vars expresses.
func passedThrough(v manifest.Var) (string, bool) {
	name, ok := v.Value.SingleRef()
	return name, ok && name == v.Name
}

func (w *writer) stdio(e *providers.Entry) {
	cmd, _ := e.Command.Literal()
	w.str("command", cmd)
	if len(e.Args) > 0 {
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i], _ = a.Literal()
		}
		w.strs("args", args)
	}
	var env []manifest.EnvVar
	var envVars []string
	for _, v := range e.Env {
		if name, ok := passedThrough(v); ok {
			envVars = appendNew(envVars, name)
			continue
		}
		val, ok := v.Value.Literal()
		if !ok {
			// Only a serve entry gets here (Native ones are expressible):
			// Codex would pass "${USER}" as text, so the variable is left
			// out, and serve resolves it from the manifest and the
			// variables of env_vars.
			continue
		}
		env = append(env, manifest.EnvVar{Name: v.Name, Value: val})
	}
	for _, name := range e.Passthrough {
		envVars = appendNew(envVars, name)
	}
	if len(env) > 0 {
		w.table("env", env)
	}
	if len(envVars) > 0 {
		w.strs("env_vars", envVars)
	}
	if dir, _ := e.Cwd.Literal(); dir != "" {
		w.str("cwd", dir)
	}
}

// remoteExpressible reports whether Codex can reach e itself: its url is
// literal (Codex expands no ${VAR} in it), and each header is literal or
// exactly one ${VAR} (env_http_headers).
func remoteExpressible(e *providers.Entry) bool {
	if !e.URL.IsLiteral() {
		return false
	}
	for _, h := range e.Headers {
		if _, ok := h.Value.SingleRef(); !ok && !h.Value.IsLiteral() {
			return false
		}
	}
	return true
}

// remote writes a remote entry that remoteExpressible accepted.
func (w *writer) remote(e *providers.Entry) {
	url, _ := e.URL.Literal()
	w.str("url", url)
	if e.BearerTokenEnv != "" {
		w.str("bearer_token_env_var", e.BearerTokenEnv)
	}
	var literal []manifest.EnvVar
	var fromEnv []manifest.EnvVar
	for _, h := range e.Headers {
		if v, ok := h.Value.Literal(); ok {
			literal = append(literal, manifest.EnvVar{Name: h.Name, Value: v})
		} else if name, ok := h.Value.SingleRef(); ok {
			fromEnv = append(fromEnv, manifest.EnvVar{Name: h.Name, Value: name})
		}
	}
	if len(literal) > 0 {
		w.table("http_headers", literal)
	}
	if len(fromEnv) > 0 {
		w.table("env_http_headers", fromEnv)
	}
}

func (w *writer) timeouts(s *manifest.Server) {
	if s.StartupTimeout > 0 {
		w.raw("startup_timeout_sec", seconds(s.StartupTimeout))
	}
	if s.ToolTimeout > 0 {
		w.raw("tool_timeout_sec", seconds(s.ToolTimeout))
	}
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// writer writes the key/value lines of one table.
type writer struct {
	b strings.Builder
}

func (w *writer) raw(key, value string) {
	w.b.WriteString(manifest.TOMLKey(key))
	w.b.WriteString(" = ")
	w.b.WriteString(value)
	w.b.WriteByte('\n')
}

func (w *writer) str(key, value string) { w.raw(key, manifest.TOMLString(value)) }

func (w *writer) strs(key string, values []string) {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = manifest.TOMLString(v)
	}
	w.raw(key, "["+strings.Join(quoted, ", ")+"]")
}

// table writes an inline table: Codex's own writer uses them for env.
func (w *writer) table(key string, vars []manifest.EnvVar) {
	kvs := make([]string, len(vars))
	for i, v := range vars {
		kvs[i] = manifest.TOMLKey(v.Name) + " = " + manifest.TOMLString(v.Value)
	}
	w.raw(key, "{ "+strings.Join(kvs, ", ")+" }")
}
