package jsonfile

import (
	"fmt"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// Import reads the servers of an agent's file of format f, whose entries sh spells, in file
// order, as the manifest holds them: references in the agent's syntax (sh.Parse) become
// ${VAR}, "Authorization": "Bearer ${VAR}" becomes bearer_token_env, the timeout becomes
// tool_timeout, the tool filters enabled_tools and disabled_tools. What mcpgen cannot hold
// is skipped with its reason, keys it has no equivalent for are left out with a note, and a
// file that does not parse is an error at FILE:LINE:COL.
func Import(f Format, sh Shape, data []byte, file string) (*providers.ImportedFile, error) {
	plain, _, entries, managed, err := Read(f, data)
	if err != nil {
		return nil, atFile(file, err)
	}
	im := &importer{f: f, sh: sh, data: plain, file: file, out: &providers.ImportedFile{File: file, Format: sh.Title + " config", Provider: sh.Provider}}
	for i, e := range entries {
		if &entries[i] != Last(entries, e.Key) {
			line, _ := Position(plain, e.At)
			im.out.Notes = append(im.out.Notes, fmt.Sprintf("Server %q is written twice; line %d is left out: %s reads the last one.", e.Key, line, sh.Title))
			continue
		}
		if s := im.entry(e, managed[e.Key]); s != nil {
			im.out.Add(s)
		}
	}
	return im.out, nil
}

type importer struct {
	f    Format
	sh   Shape
	data []byte
	file string
	out  *providers.ImportedFile
}

// entry reads one server; nil when it is skipped.
func (im *importer) entry(e Member, managed bool) *providers.ImportedServer {
	sh := im.sh
	line, _ := Position(im.data, e.At)
	skip := func(format string, args ...any) *providers.ImportedServer {
		im.out.Skip(e.Key, line, format, args...)
		return nil
	}
	if KindOf(e.Value) != "an object" {
		return skip("its value is %s, not an object", KindOf(e.Value))
	}
	fields := Members(im.data, e.ValAt)
	if sh.Unheld != nil {
		if why := sh.Unheld(fields); why != "" {
			return skip("%s", why)
		}
	}
	s := &manifest.Server{Name: e.Key, Enabled: true}
	imp := &providers.ImportedServer{Server: s, Line: line, Managed: managed}
	var reason string
	str := func(m *Member) string {
		var v string
		if err := json.Unmarshal(m.Value, &v); err != nil && reason == "" {
			reason = fmt.Sprintf("%q is %s, not a string", m.Key, KindOf(m.Value))
		}
		return v
	}
	value := func(key, text string) manifest.Template {
		t, err := sh.Parse(text)
		if err != nil && reason == "" {
			reason = fmt.Sprintf("%s: %v", key, err)
		}
		return t
	}
	typ := ""
	if m := Last(fields, "type"); m != nil {
		typ = str(m)
	}
	url := Last(fields, sh.URLKey)
	switch {
	case url != nil:
		s.Kind = manifest.KindRemote
		if sh.RemoteType != "" && typ != "" && typ != sh.RemoteType {
			return skip("type %q: mcpgen writes Streamable HTTP servers only", typ)
		}
	case Last(fields, "command") != nil:
		s.Kind = manifest.KindCommand
		s.Context = manifest.ContextSelect{None: true} // no workspace context, as under the agent
	case Last(fields, "url") != nil || Last(fields, "serverUrl") != nil || Last(fields, "httpUrl") != nil:
		return skip("a url that %s reads as SSE or under another key: mcpgen writes Streamable HTTP servers only; keep it in this file", sh.Title)
	default:
		return skip("no command and no url")
	}
	for i := range fields {
		m := &fields[i]
		if m != Last(fields, m.Key) {
			continue
		}
		switch m.Key {
		case "type":
		case "description":
			s.Description = str(m)
		case "command":
			if sh.CommandArray {
				var cmd []string
				if err := json.Unmarshal(m.Value, &cmd); err != nil || len(cmd) == 0 {
					reason = `"command" is not a non-empty array of strings`
					continue
				}
				s.Command = value("command", cmd[0])
				for i, a := range cmd[1:] {
					s.Args = append(s.Args, value(fmt.Sprintf("command[%d]", i+1), a))
				}
				continue
			}
			v := str(m)
			if strings.TrimSpace(v) == "" && reason == "" {
				reason = `"command" is empty`
			}
			s.Command = value("command", v)
		case "args":
			var args []string
			if err := json.Unmarshal(m.Value, &args); err != nil {
				reason = `"args" is not an array of strings`
				continue
			}
			for i, a := range args {
				s.Args = append(s.Args, value(fmt.Sprintf("args[%d]", i), a))
			}
		case sh.EnvKey, sh.HeadersKey:
			if KindOf(m.Value) != "an object" {
				reason = fmt.Sprintf("%q is %s, not an object", m.Key, KindOf(m.Value))
				continue
			}
			for _, kv := range Members(im.data, m.ValAt) {
				v := manifest.Var{Name: kv.Key, Value: value(m.Key+"."+kv.Key, str(&kv))}
				if m.Key == sh.EnvKey {
					s.Env = append(s.Env, v)
				} else {
					s.Headers = append(s.Headers, v)
				}
			}
		case sh.URLKey:
			s.URL = value(m.Key, str(m))
		case sh.CwdKey:
			s.Cwd = value(m.Key, str(m))
		case sh.TimeoutKey:
			var n float64
			if err := json.Unmarshal(m.Value, &n); err != nil || n <= 0 {
				imp.Note("%s left out: %s is not a positive number.", m.Key, m.Value)
				continue
			}
			s.ToolTimeout = time.Duration(n * float64(sh.TimeoutUnit))
		case sh.IncludeToolsKey, sh.ExcludeToolsKey:
			var tools []string
			if err := json.Unmarshal(m.Value, &tools); err != nil {
				imp.Note("%s left out: not an array of tool names.", m.Key)
				continue
			}
			if m.Key == sh.IncludeToolsKey {
				if len(tools) == 1 && tools[0] == "*" {
					continue // every tool, as without a filter (Copilot CLI's "tools": ["*"])
				}
				s.EnabledTools = nonNil(tools)
			} else {
				s.DisabledTools = nonNil(tools)
			}
		default:
			if sh.Ignore != nil && sh.Ignore(m.Key) {
				continue
			}
			imp.Note("%s left out: mcpgen has no such setting; keep the server in %s by hand if it needs it.", m.Key, im.file)
		}
	}
	if reason != "" {
		return skip("%s", reason)
	}
	providers.FinishImported(imp, sh.Title)
	return imp
}

// ParseDollar reads $NAME and ${NAME} (Gemini CLI, Qwen Code) as references; a "$" before
// anything else is text.
func ParseDollar(text string) (manifest.Template, error) {
	var t manifest.Template
	lit := func(s string) {
		if s == "" {
			return
		}
		if n := len(t); n > 0 && t[n-1].Ref == "" {
			t[n-1].Text += s
			return
		}
		t = append(t, manifest.Segment{Text: s})
	}
	for text != "" {
		i := strings.IndexByte(text, '$')
		if i < 0 {
			lit(text)
			break
		}
		lit(text[:i])
		rest := text[i+1:]
		name, n := "", 0
		if strings.HasPrefix(rest, "{") {
			if j := strings.IndexByte(rest, '}'); j > 0 {
				name, n = rest[1:j], j+1
			}
		} else {
			for n < len(rest) && (rest[n] == '_' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= '0' && rest[n] <= '9') {
				n++
			}
			name = rest[:n]
		}
		if name == "" || manifest.CheckVarName(name) != nil {
			return nil, fmt.Errorf("%q holds a \"$\" that is no variable mcpgen.toml can name (it has no escape for it)", text)
		}
		t = append(t, manifest.Segment{Ref: name})
		text = rest[n:]
	}
	return t, nil
}

// ParseLiteral reads a value of an agent that expands no reference: text, which
// mcpgen.toml can hold unless it has a "${" (it has no escape for it).
func ParseLiteral(text string) (manifest.Template, error) {
	if strings.Contains(text, "${") {
		return nil, fmt.Errorf("%q holds the text \"${\", which mcpgen.toml would read as a variable reference (it has no escape for it)", text)
	}
	if text == "" {
		return nil, nil
	}
	return manifest.Template{{Text: text}}, nil
}

// ParseBraced returns a Parse for references written prefix NAME suffix, such as
// ${env:NAME} (Cursor, VS Code, Windsurf) or {env:NAME} (opencode). Any other "${" (VS
// Code's ${input:id}, ${workspaceFolder}) is an error: mcpgen.toml has no equivalent.
func ParseBraced(prefix, suffix string) func(string) (manifest.Template, error) {
	return func(text string) (manifest.Template, error) {
		var t manifest.Template
		for text != "" {
			i := strings.Index(text, prefix)
			if i < 0 {
				if strings.Contains(text, "${") {
					return nil, fmt.Errorf("%q holds a reference other than %sNAME%s (an input, a predefined variable), which mcpgen has no equivalent for", text, prefix, suffix)
				}
				t = append(t, manifest.Segment{Text: text})
				break
			}
			if strings.Contains(text[:i], "${") {
				return nil, fmt.Errorf("%q holds a reference other than %sNAME%s (an input, a predefined variable), which mcpgen has no equivalent for", text, prefix, suffix)
			}
			if i > 0 {
				t = append(t, manifest.Segment{Text: text[:i]})
			}
			rest := text[i+len(prefix):]
			j := strings.Index(rest, suffix)
			if j < 0 || manifest.CheckVarName(rest[:j]) != nil {
				return nil, fmt.Errorf("%q: %s...%s does not name a variable", text, prefix, suffix)
			}
			t = append(t, manifest.Segment{Ref: rest[:j]})
			text = rest[j+len(suffix):]
		}
		return t, nil
	}
}

// atFile puts the file in front of an error that may start with LINE:COL.
func atFile(file string, err error) error {
	if msg := err.Error(); msg != "" && msg[0] >= '0' && msg[0] <= '9' {
		return fmt.Errorf("%s:%s", file, msg)
	}
	return fmt.Errorf("%s: %s", file, err)
}
