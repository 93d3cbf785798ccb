package goose

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Import reads the extensions of Goose's config.yaml, in file order, as the manifest holds
// them: a stdio extension's cmd, args and envs as text, its env_keys as references
// (API_KEY = "${API_KEY}"), a streamable_http one's uri and headers (a header's ${VAR} a
// reference), timeout as tool_timeout, available_tools as enabled_tools, enabled = false
// as a disabled server. Goose's own extensions (builtin, platform, ...) stay in the file,
// as does an SSE one (mcpgen writes Streamable HTTP only). A file that does not parse is
// an error at FILE:LINE:COL.
func Import(data []byte, file string) (*providers.ImportedFile, error) {
	d, err := parse(bytes.TrimPrefix(data, providers.UTF8BOM))
	if err != nil {
		return nil, fmt.Errorf("%s:%w", file, err)
	}
	out := &providers.ImportedFile{File: file, Format: "Goose config.yaml", Provider: Name}
	for _, e := range d.entries {
		_, managed := d.managed[e.name]
		if s := importEntry(out, e, managed, file); s != nil {
			out.Add(s)
		}
	}
	return out, nil
}

// importEntry reads one extension; nil when it is skipped.
func importEntry(out *providers.ImportedFile, e entry, managed bool, file string) *providers.ImportedServer {
	line := e.key.Line
	skip := func(format string, args ...any) *providers.ImportedServer {
		out.Skip(e.name, line, format, args...)
		return nil
	}
	if e.value.Kind != yaml.MappingNode {
		return skip("its value is %s, not a mapping", kindOf(e.value))
	}
	fields := map[string]*yaml.Node{}
	var order []string
	for i := 0; i+1 < len(e.value.Content); i += 2 {
		k := e.value.Content[i].Value
		if _, dup := fields[k]; !dup {
			order = append(order, k)
		}
		fields[k] = e.value.Content[i+1]
	}
	var reason string
	text := func(key string) string {
		n := fields[key]
		if n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return ""
		}
		if n.Kind != yaml.ScalarNode {
			if reason == "" {
				reason = fmt.Sprintf("%s is %s, not text", key, kindOf(n))
			}
			return ""
		}
		return n.Value
	}
	literal := func(key, s string) manifest.Template {
		if strings.Contains(s, "${") && reason == "" {
			reason = fmt.Sprintf("%s: %q holds the text \"${\", which mcpgen.toml would read as a variable reference (it has no escape for it)", key, s)
		}
		if s == "" {
			return nil
		}
		return manifest.Template{{Text: s}}
	}
	list := func(key string) []string {
		var ss []string
		if n := fields[key]; n != nil && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
			if n.Kind != yaml.SequenceNode || n.Decode(&ss) != nil {
				if reason == "" {
					reason = fmt.Sprintf("%s is %s, not a list of text", key, kindOf(n))
				}
			}
		}
		return ss
	}
	strMap := func(key string) []manifest.Var {
		n := fields[key]
		if n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			if reason == "" {
				reason = fmt.Sprintf("%s is %s, not a mapping", key, kindOf(n))
			}
			return nil
		}
		var vars []manifest.Var
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				if reason == "" {
					reason = fmt.Sprintf("%s.%s is %s, not text", key, k.Value, kindOf(v))
				}
				continue
			}
			vars = append(vars, manifest.Var{Name: k.Value, Value: manifest.Template{{Text: v.Value}}})
		}
		return vars
	}

	s := &manifest.Server{Name: e.name, Enabled: true}
	imp := &providers.ImportedServer{Server: s, Line: line, Managed: managed}
	if n := fields["enabled"]; n != nil {
		var on bool
		if n.Decode(&on) == nil {
			s.Enabled = on
		}
	}
	typ := text("type")
	switch typ {
	case "stdio":
		s.Kind = manifest.KindCommand
		s.Context = manifest.ContextSelect{None: true} // no workspace context, as under Goose
		cmd := text("cmd")
		if strings.TrimSpace(cmd) == "" && reason == "" {
			reason = "cmd is empty"
		}
		s.Command = literal("cmd", cmd)
		for i, a := range list("args") {
			s.Args = append(s.Args, literal(fmt.Sprintf("args[%d]", i), a))
		}
		for _, v := range strMap("envs") {
			s.Env = append(s.Env, manifest.Var{Name: v.Name, Value: literal("envs."+v.Name, v.Value[0].Text)})
		}
	case "streamable_http":
		s.Kind = manifest.KindRemote
		s.URL = literal("uri", text("uri"))
		for _, h := range strMap("headers") {
			t, err := jsonfile.ParseDollar(h.Value[0].Text) // ${NAME} and $NAME, as Goose substitutes them
			if err != nil && reason == "" {
				reason = fmt.Sprintf("headers.%s: %v", h.Name, err)
			}
			s.Headers = append(s.Headers, manifest.Var{Name: h.Name, Value: t})
		}
		if len(strMap("envs")) > 0 {
			imp.Note("envs left out: a remote server takes no environment; a header that names one of them needs it in the manifest by hand.")
		}
	case "sse":
		return skip("an SSE extension, which Goose no longer runs: mcpgen writes Streamable HTTP servers only; keep it in this file")
	case "":
		return skip("no type")
	default:
		return skip("a Goose extension of type %q, not an MCP server that mcpgen can hold; it stays in %s", typ, filepath.Base(file))
	}
	for _, k := range list("env_keys") {
		if manifest.CheckVarName(k) != nil {
			if reason == "" {
				reason = fmt.Sprintf("env_keys: %q is no variable name mcpgen.toml can hold", k)
			}
			continue
		}
		if s.Kind == manifest.KindCommand {
			s.Env = append(s.Env, manifest.Var{Name: k, Value: manifest.Template{{Ref: k}}})
		}
	}
	if d := text("description"); d != "" {
		s.Description = d
	}
	if n := fields["timeout"]; n != nil && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		var secs float64
		if n.Decode(&secs) != nil || secs <= 0 {
			imp.Note("timeout left out: %s is not a positive number of seconds.", n.Value)
		} else {
			s.ToolTimeout = time.Duration(secs * float64(time.Second))
		}
	}
	if tools := list("available_tools"); len(tools) > 0 {
		s.EnabledTools = tools // an empty list is every tool
	}
	for _, k := range order {
		switch k {
		case "enabled", "type", "name", "description", "cmd", "args", "envs", "env_keys", "uri", "headers", "timeout", "bundled", "available_tools":
		default:
			imp.Note("%s left out: mcpgen has no such setting; keep the extension in %s by hand if it needs it.", k, file)
		}
	}
	if reason != "" {
		return skip("%s", reason)
	}
	providers.FinishImported(imp, Title)
	return imp
}
