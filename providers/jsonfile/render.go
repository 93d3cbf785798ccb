package jsonfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// A Shape is how an agent's JSON entry spells a server: the keys of each field, the value
// of "type", and the syntax of a reference to a variable. Render writes every agent of the
// JSON family from one.
type Shape struct {
	Provider string // as the manifest's providers = [...] names it
	Title    string // the agent, in notes and errors

	// StdioType and RemoteType are the values of "type" ("" for no type key).
	StdioType, RemoteType string
	// CommandArray writes the command and its arguments as one array under "command"
	// (opencode), instead of "command" and "args".
	CommandArray bool
	// The keys of the environment, the url, the headers and the working directory. An
	// empty CwdKey: the agent has none, and a server with a cwd goes through mcpgen serve.
	EnvKey, URLKey, HeadersKey, CwdKey string
	// TimeoutKey, when set, holds the tool timeout in TimeoutUnit.
	TimeoutKey  string
	TimeoutUnit time.Duration
	// IncludeToolsKey and ExcludeToolsKey hold enabled_tools and disabled_tools; empty:
	// the agent has no per-server tool filter (the launcher's gateway applies them).
	IncludeToolsKey, ExcludeToolsKey string
	// Ref writes a reference to the variable name in the agent's syntax; nil: the agent
	// expands none (or how is not known), and every value with a reference goes through
	// mcpgen serve, which reads the variables from the environment the agent gives it.
	Ref func(name string) string
	// Clashes reports whether literal text would read as a reference in the agent's syntax
	// (a "$" where $VAR expands): such a value goes through mcpgen serve.
	Clashes func(text string) bool
	// ArgsAlways writes "args" even when empty, for agents that require it (Zed).
	ArgsAlways bool
	// Extra adds what the agent requires beyond the server (Copilot CLI's "tools").
	Extra func(e *providers.Entry, o *Object)

	// Parse reads a value in the agent's syntax, for import.
	Parse func(text string) (manifest.Template, error)
	// Ignore reports whether import leaves a key of the agent's out without a note
	// (what Extra writes).
	Ignore func(key string) bool
	// Unheld, when set, says why import leaves an entry in the file that is no server
	// mcpgen can hold (a server that one of Zed's extensions provides), or "".
	Unheld func(fields []Member) string
}

// Dollar writes ${NAME}: Gemini CLI and Qwen Code, which expand $NAME and ${NAME} (no
// default, and an unset one stays as written).
func Dollar(name string) string { return "${" + name + "}" }

// HasDollar is the Clashes of agents that expand $NAME or ${NAME}.
func HasDollar(text string) bool { return strings.Contains(text, "$") }

// EnvColon writes ${env:NAME}: Cursor, VS Code and Windsurf.
func EnvColon(name string) string { return "${env:" + name + "}" }

// HasDollarBrace is the Clashes of agents whose references start with "${" (VS Code's
// ${workspaceFolder} and ${input:id} among them).
func HasDollarBrace(text string) bool { return strings.Contains(text, "${") }

// Render returns the entry of every server of m meant for sh.Provider, in the manifest's
// order, and notes on what it left out or could not express.
func Render(m *manifest.Manifest, sh Shape, o providers.Options) ([]providers.Rendered, []string, error) {
	o, err := o.WithContext(m)
	if err != nil {
		return nil, nil, err
	}
	r := renderer{sh: sh, m: m, o: o}
	if o.Gateway != "" {
		return r.gateway()
	}
	var entries []providers.Rendered
	var notes []string
	for _, s := range m.Servers {
		if !o.Meant(s, sh.Provider) || !s.Enabled {
			continue
		}
		e := r.prepare(s)
		entries = append(entries, r.rendered(o.EntryName(m, s), e))
		if (s.EnabledTools != nil && sh.IncludeToolsKey == "" || s.DisabledTools != nil && sh.ExcludeToolsKey == "") && !r.o.Launcher {
			notes = append(notes, fmt.Sprintf("server %q: %s cannot filter this server's tools as enabled_tools and disabled_tools say: they apply through the launcher (--launcher or --gateway)", s.Name, sh.Title))
		}
	}
	return entries, notes, nil
}

type renderer struct {
	sh Shape
	m  *manifest.Manifest
	o  providers.Options
}

// gateway renders the one entry of emit --gateway or --gateway-url.
func (r renderer) gateway() ([]providers.Rendered, []string, error) {
	if r.o.GatewayURL != "" {
		e := providers.RemoteGateway(r.o)
		if r.o.GatewayTokenEnv != "" && r.sh.Ref == nil {
			// The token can only be a reference, which the agent has no syntax for:
			// mcpgen serve --url reads it from the environment the agent gives it.
			e = providers.RelayGateway(r.o)
			e.Passthrough = nil
		}
		return []providers.Rendered{r.rendered(r.o.EntryName(r.m, e.Server), e)}, nil, nil
	}
	servers := providers.GatewayServers(r.m, r.sh.Provider, r.o)
	if len(servers) == 0 {
		return nil, nil, fmt.Errorf("no enabled server of the manifest is meant for %s: the gateway would have no tools", r.sh.Provider)
	}
	e := providers.Gateway(r.m, servers, r.o)
	return []providers.Rendered{r.rendered(r.o.EntryName(r.m, e.Server), e)}, nil, nil
}

// rendered is e's entry, named name, with its fingerprint.
func (r renderer) rendered(name string, e *providers.Entry) providers.Rendered {
	raw := r.encode(e)
	return providers.Rendered{Name: name, Value: raw, Fingerprint: r.o.Cache.FingerprintJSON(raw)}
}

// prepare decides how the agent runs s: as the manifest has it when the agent can express
// every value, else through mcpgen serve (or connect, with --launcher).
func (r renderer) prepare(s *manifest.Server) *providers.Entry {
	if r.o.Launcher && s.Kind.Stdio() {
		return providers.Connect(r.m, s, r.o)
	}
	e := providers.Native(r.m, s, r.o)
	if s.Kind == manifest.KindRemote {
		if r.expressible(e.URL) && !slices.ContainsFunc(e.Headers, func(h manifest.Var) bool { return !r.expressible(h.Value) }) &&
			(e.BearerTokenEnv == "" || r.sh.Ref != nil) {
			return e
		}
		return r.serve(s)
	}
	cwdOK := len(e.Cwd) == 0 || r.sh.CwdKey != "" && r.expressible(e.Cwd)
	// A project's config names no path of its checkout; a path built on the agent's
	// WORKSPACE_DIR must not fall to the root when it is unset; a server whose workspace
	// is the manifest's directory must not run where the agent happens to start; a
	// sandboxed one runs in mcpgen's sandbox, which only mcpgen serve gives it.
	if s.Kind == manifest.KindCommand && cwdOK && r.allExpressible(e) &&
		!(r.o.Scope == providers.ScopeProject && e.InCheckout()) && !providers.InManifestDir(r.m, s, r.o) &&
		!providers.Sandboxed(r.m, s) {
		return e
	}
	return r.serve(s)
}

// serve is s through mcpgen serve, with the context values the agent can pass; the others
// serve resolves itself, from the environment it inherits and the manifest.
func (r renderer) serve(s *manifest.Server) *providers.Entry {
	e := providers.Serve(r.m, s, r.o)
	var env []manifest.Var
	for _, v := range e.Env {
		if r.expressible(v.Value) {
			env = append(env, v)
		}
	}
	e.Env = env
	return e
}

// expressible reports whether the agent reads t as mcpgen means it: its references have no
// default (none of these agents has that syntax) and are not context left to the agent
// (which, unset, would reach the server as the reference's text), and its text reads as
// no reference.
func (r renderer) expressible(t manifest.Template) bool {
	for _, seg := range t {
		switch {
		case seg.Ref == "" && r.sh.Clashes != nil && r.sh.Clashes(seg.Text):
			return false
		case seg.Ref != "" && (r.sh.Ref == nil || seg.HasDefault || manifest.IsAgentContext(seg.Ref)):
			return false
		}
	}
	return true
}

func (r renderer) allExpressible(e *providers.Entry) bool {
	ts := append([]manifest.Template{e.Command}, e.Args...)
	for _, v := range e.Env {
		ts = append(ts, v.Value)
	}
	return !slices.ContainsFunc(ts, func(t manifest.Template) bool { return !r.expressible(t) })
}

// value writes t in the agent's syntax.
func (r renderer) value(t manifest.Template) string {
	var b strings.Builder
	for _, seg := range t {
		if seg.Ref != "" {
			b.WriteString(r.sh.Ref(seg.Ref))
		} else {
			b.WriteString(seg.Text)
		}
	}
	return b.String()
}

// encode writes the entry's JSON object.
func (r renderer) encode(e *providers.Entry) []byte {
	sh := r.sh
	var o Object
	remote := e.Server.Kind == manifest.KindRemote && !e.Serve // a serve entry runs mcpgen, whatever it reaches
	if remote {
		if sh.RemoteType != "" {
			o.Add("type", Str(sh.RemoteType))
		}
		o.Add(sh.URLKey, Str(r.value(e.URL)))
		var headers Object
		if e.BearerTokenEnv != "" {
			headers.Add("Authorization", Str("Bearer "+sh.Ref(e.BearerTokenEnv)))
		}
		for _, h := range e.Headers {
			headers.Add(h.Name, Str(r.value(h.Value)))
		}
		if headers.Len() > 0 {
			o.Add(sh.HeadersKey, headers.Bytes())
		}
	} else {
		if sh.StdioType != "" {
			o.Add("type", Str(sh.StdioType))
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = r.value(a)
		}
		if sh.CommandArray {
			o.Add("command", Strs(append([]string{r.value(e.Command)}, args...)))
		} else {
			o.Add("command", Str(r.value(e.Command)))
			if len(args) > 0 || sh.ArgsAlways {
				o.Add("args", Strs(args))
			}
		}
		if len(e.Env) > 0 {
			var env Object
			for _, v := range e.Env {
				env.Add(v.Name, Str(r.value(v.Value)))
			}
			o.Add(sh.EnvKey, env.Bytes())
		}
		if len(e.Cwd) > 0 {
			o.Add(sh.CwdKey, Str(r.value(e.Cwd)))
		}
	}
	s := e.Server
	if sh.TimeoutKey != "" && s.ToolTimeout > 0 {
		o.Add(sh.TimeoutKey, []byte(strconv.FormatInt(int64(s.ToolTimeout/sh.TimeoutUnit), 10)))
	}
	// The agent filters the tools by name, whether the server runs itself or
	// through mcpgen.
	if s.EnabledTools != nil && sh.IncludeToolsKey != "" {
		o.Add(sh.IncludeToolsKey, Strs(nonNil(s.EnabledTools)))
	}
	if s.DisabledTools != nil && sh.ExcludeToolsKey != "" {
		o.Add(sh.ExcludeToolsKey, Strs(nonNil(s.DisabledTools)))
	}
	if sh.Extra != nil {
		sh.Extra(e, &o)
	}
	return o.Bytes()
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
