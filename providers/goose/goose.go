// Package goose writes the MCP servers of Goose: the extensions mapping of its config.yaml,
// which holds the user's other settings too (provider, model, Goose's own extensions).
//
// Checked against Goose's source (block/goose: crates/goose/src/config/paths.rs,
// config/extensions.rs, agents/extension.rs, agents/extension_manager.rs) and its docs
// (documentation/docs/guides/config-files.md):
//
//   - The file is <config dir>/config.yaml: $GOOSE_PATH_ROOT/config when that is an
//     absolute path; else, on Windows, %APPDATA%\Block\goose\config; elsewhere, macOS
//     included, $XDG_CONFIG_HOME/goose (else ~/.config/goose). Goose has no project config.
//   - Each entry of extensions is {enabled, type, name, description, ...}: a stdio server
//     is type: stdio with cmd, args, envs, env_keys and timeout (in seconds); a remote one
//     type: streamable_http with uri, headers, envs, env_keys and timeout; available_tools,
//     when not empty, is the only tools Goose offers. Goose serializes every field when it
//     saves the file (bundled: null, available_tools: []), so mcpgen writes them all: an
//     entry Goose saved again keeps its fingerprint.
//   - Goose expands no variable in cmd, args, envs or uri. env_keys names variables whose
//     values Goose takes from its environment, else its keyring, and gives the server; a
//     header's ${VAR} or $VAR is replaced with a value of envs or env_keys. An env_keys
//     name Goose finds nowhere stops the server with an error naming it.
//   - A stdio server inherits Goose's environment and runs in Goose's working directory.
package goose

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "goose"

// Title is the agent's name for people.
const Title = "Goose"

// Provider is Goose.
var Provider providers.Provider = provider{}

type provider struct{}

func (provider) Name() string  { return Name }
func (provider) Title() string { return Title }

func (provider) Files() providers.Files {
	return providers.Files{User: UserConfig, Default: providers.ScopeUser}
}

// UserConfig is Goose's config.yaml on the system goos.
func UserConfig(goos, home string, getenv func(string) string) (string, error) {
	if root := getenv("GOOSE_PATH_ROOT"); root != "" && isAbs(goos, root) {
		return filepath.Join(root, "config", "config.yaml"), nil
	}
	if goos == "windows" {
		return filepath.Join(providers.ConfigDir(goos, home, getenv), "Block", "goose", "config", "config.yaml"), nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) { // as Goose's etcetera, which ignores a relative one
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "goose", "config.yaml"), nil
}

// isAbs is filepath.IsAbs for goos, which may not be this system's.
func isAbs(goos, path string) bool {
	if goos != "windows" {
		return strings.HasPrefix(path, "/")
	}
	return filepath.IsAbs(path) || len(path) > 2 && path[1] == ':' && (path[2] == '\\' || path[2] == '/')
}

func (provider) Merge(existing []byte, entries []providers.Rendered, o providers.MergeOptions) ([]byte, error) {
	return Merge(existing, entries, o)
}

func (provider) Owners(data []byte) ([]providers.Owned, error) { return Owners(data) }

func (provider) Import(data []byte, file string) (*providers.ImportedFile, error) {
	return Import(data, file)
}

// Render returns the entry of every enabled server of m meant for Goose, in the manifest's
// order, each a YAML mapping, and notes on what Goose cannot do as the manifest says.
func (provider) Render(m *manifest.Manifest, o providers.Options) ([]providers.Rendered, []string, error) {
	o, err := o.WithContext(m)
	if err != nil {
		return nil, nil, err
	}
	r := renderer{m: m, o: o}
	if o.Gateway != "" {
		return r.gateway()
	}
	var entries []providers.Rendered
	var notes []string
	for _, s := range m.Servers {
		if !o.Meant(s, Name) || !s.Enabled {
			continue
		}
		name := o.EntryName(m, s)
		entries = append(entries, r.encode(name, r.prepare(s)))
		if r.o.Launcher {
			continue
		}
		if s.DisabledTools != nil || s.EnabledTools != nil && len(s.EnabledTools) == 0 {
			notes = append(notes, fmt.Sprintf("server %q: Goose keeps only the tools that available_tools names, and reads an empty list as every tool: disabled_tools and enabled_tools = [] apply through the launcher (--launcher or --gateway)", s.Name))
		}
	}
	return entries, notes, nil
}

type renderer struct {
	m *manifest.Manifest
	o providers.Options
}

// gateway renders the one entry of emit --gateway or --gateway-url.
func (r renderer) gateway() ([]providers.Rendered, []string, error) {
	var e *providers.Entry
	if r.o.GatewayURL != "" {
		e = providers.RemoteGateway(r.o)
	} else {
		servers := providers.GatewayServers(r.m, Name, r.o)
		if len(servers) == 0 {
			return nil, nil, fmt.Errorf("no enabled server of the manifest is meant for %s: the gateway would have no tools", Name)
		}
		e = providers.Gateway(r.m, servers, r.o)
	}
	name := r.o.EntryName(r.m, e.Server)
	return []providers.Rendered{r.encode(name, e)}, nil, nil
}

// prepare decides how Goose runs s: as the manifest has it when Goose can express every
// value, else through mcpgen serve (or connect, with --launcher).
func (r renderer) prepare(s *manifest.Server) *providers.Entry {
	if r.o.Launcher && s.Kind.Stdio() {
		return providers.Connect(r.m, s, r.o)
	}
	e := providers.Native(r.m, s, r.o)
	if s.Kind == manifest.KindRemote {
		_, literalURL := e.URL.Literal()
		if literalURL && !slices.ContainsFunc(e.Headers, func(h manifest.Var) bool { return !headerExpressible(h.Value) }) {
			return e
		}
		return providers.Serve(r.m, s, r.o)
	}
	// Goose has no cwd (a server runs in Goose's working directory) and expands no
	// variable in cmd and args; a server whose workspace is the manifest's directory must
	// not run where Goose happens to start; a sandboxed one runs in mcpgen's sandbox.
	if s.Kind == manifest.KindCommand && len(e.Cwd) == 0 && isLiteral(e.Command) &&
		!slices.ContainsFunc(e.Args, func(t manifest.Template) bool { return !isLiteral(t) }) &&
		!slices.ContainsFunc(e.Env, func(v manifest.Var) bool { _, _, ok := envValue(v); return !ok }) &&
		!providers.InManifestDir(r.m, s, r.o) && !providers.Sandboxed(r.m, s) {
		return e
	}
	return providers.Serve(r.m, s, r.o)
}

func isLiteral(t manifest.Template) bool {
	_, ok := t.Literal()
	return ok
}

// envValue says how Goose can give a server the variable v: a literal value in envs, or,
// when v is its own name's secret (API_KEY = "${API_KEY}"), in env_keys, which Goose
// fills from its environment or keyring. Nothing else: Goose expands no reference in
// envs, and env_keys cannot rename a variable. Context left to the agent is no secret:
// Goose does not set it, and would stop the server for its want.
func envValue(v manifest.Var) (value string, key bool, ok bool) {
	if lit, isLit := v.Value.Literal(); isLit {
		return lit, false, true
	}
	ref, isRef := v.Value.SingleRef()
	if isRef && ref == v.Name && !manifest.IsAgentContext(ref) {
		return "", true, true
	}
	return "", false, false
}

// headerExpressible reports whether Goose sends the header value t as mcpgen means it:
// literal text without a "$" (which Goose would read as a reference), or references to
// secrets, which env_keys gives Goose to replace.
func headerExpressible(t manifest.Template) bool {
	for _, seg := range t {
		switch {
		case seg.Ref == "" && strings.Contains(seg.Text, "$"):
			return false
		case seg.Ref != "" && (seg.HasDefault || manifest.IsAgentContext(seg.Ref)):
			return false
		}
	}
	return true
}

// encode writes the entry as Goose saves one: every field, in Goose's order; and its
// fingerprint.
func (r renderer) encode(name string, e *providers.Entry) providers.Rendered {
	s := e.Server
	var b ymap
	b.add("enabled", true)
	keys := []string{}
	addKey := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	envs := ymap{}
	if s.Kind == manifest.KindRemote && !e.Serve {
		b.add("type", "streamable_http")
		b.add("name", name)
		b.add("description", s.Description)
		url, _ := e.URL.Literal()
		b.add("uri", url)
		headers := ymap{}
		if e.BearerTokenEnv != "" {
			headers.add("Authorization", "Bearer ${"+e.BearerTokenEnv+"}")
			addKey(e.BearerTokenEnv)
		}
		for _, h := range e.Headers {
			var v strings.Builder
			for _, seg := range h.Value {
				if seg.Ref != "" {
					v.WriteString("${" + seg.Ref + "}")
					addKey(seg.Ref)
				} else {
					v.WriteString(seg.Text)
				}
			}
			headers.add(h.Name, v.String())
		}
		b.add("envs", envs)
		b.add("env_keys", keys)
		b.add("headers", headers)
	} else {
		b.add("type", "stdio")
		b.add("name", name)
		b.add("description", s.Description)
		cmd, _ := e.Command.Literal()
		b.add("cmd", cmd)
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i], _ = a.Literal()
		}
		b.add("args", args)
		for _, v := range e.Env {
			value, key, ok := envValue(v)
			switch {
			case key:
				addKey(v.Name)
			case ok:
				envs.add(v.Name, value)
			}
			// Else a serve entry's context from the environment: serve resolves it.
		}
		for _, name := range e.Passthrough {
			if !slices.Contains(providers.LauncherEnv, name) {
				addKey(name) // a secret that serve or connect reads: Goose's, by name
			}
		}
		b.add("envs", envs)
		b.add("env_keys", keys)
	}
	if s.ToolTimeout > 0 {
		b.add("timeout", int64((s.ToolTimeout+time.Second-1)/time.Second)) // whole seconds, rounded up
	} else {
		b.add("timeout", nil)
	}
	b.add("bundled", nil)
	tools := []string{}
	if len(s.EnabledTools) > 0 {
		tools = s.EnabledTools
	}
	b.add("available_tools", tools)
	return providers.Rendered{Name: name, Value: b.text(nil, 0), Fingerprint: providers.Fingerprint(b.generic())}
}
