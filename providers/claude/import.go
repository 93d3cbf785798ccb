package claude

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// The kinds of Claude files that Import reads.
const (
	// ProjectFile is a project's .mcp.json (or a file for --mcp-config).
	ProjectFile = "claude"
	// UserFile is ~/.claude.json: the user's servers at its top level, and
	// each project's local servers under projects["/abs"].
	UserFile = "claude-user"
	// DesktopFile is Claude Desktop's claude_desktop_config.json.
	DesktopFile = "claude-desktop"
)

// ImportKinds are the kinds of Claude files, as --from names them.
var ImportKinds = []string{ProjectFile, UserFile, DesktopFile}

var kindFormats = map[string]string{
	ProjectFile: "Claude Code .mcp.json",
	UserFile:    "Claude Code ~/.claude.json",
	DesktopFile: "Claude Desktop config",
}

// userFileKeys are top-level keys that only ~/.claude.json holds.
var userFileKeys = []string{"projects", "numStartups", "userID", "firstStartTime", "oauthAccount", "installMethod", "autoUpdates", "tipsHistory"}

// Detect tells which kind of Claude file data is, from its name, else from
// its top-level keys: "" when it is not one (a JSON object without
// mcpServers, and not ~/.claude.json).
func Detect(name string, data []byte) string {
	switch filepath.Base(name) {
	case ".claude.json":
		return UserFile
	case "claude_desktop_config.json":
		return DesktopFile
	case ".mcp.json":
		return ProjectFile
	}
	start := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	if jsonfile.Validate(data) != nil || jsonfile.KindOf(data[start:]) != "an object" {
		return ""
	}
	kind := ""
	for _, m := range jsonfile.Members(data, start) {
		switch {
		case slices.Contains(userFileKeys, m.Key):
			return UserFile
		case m.Key == serversKey:
			kind = ProjectFile
		}
	}
	return kind
}

// ImportOptions say what Import reads.
type ImportOptions struct {
	Kind string // ProjectFile, UserFile or DesktopFile
	// Project, for a UserFile, is the absolute path of the project whose
	// local servers are imported with the user's. Without it, Import
	// notes which projects have local servers.
	Project string
}

// Import reads the mcpServers of a Claude file, in file order, as the
// manifest holds them. Claude Code expands ${VAR} and ${VAR:-default}: they
// stay references, and "Authorization": "Bearer ${VAR}" becomes
// bearer_token_env. Claude Desktop expands nothing: its values are literal.
// timeout (milliseconds per call) becomes tool_timeout.
//
// Entries that Claude itself skips (a url without a type, a value of the
// wrong type) and those mcpgen cannot hold (sse servers) are skipped, each
// with its reason; keys mcpgen has no equivalent for are left out with a
// note. A file that is not JSON, or whose mcpServers is not an object, is
// an error at FILE:LINE:COL.
func Import(data []byte, file string, o ImportOptions) (*providers.ImportedFile, error) {
	if !slices.Contains(ImportKinds, o.Kind) {
		return nil, fmt.Errorf("unknown kind of Claude file %q: use %s", o.Kind, strings.Join(ImportKinds, ", "))
	}
	if o.Project != "" && o.Kind != UserFile {
		return nil, fmt.Errorf("%s: a project's local servers are in ~/.claude.json, not in a %s", file, kindFormats[o.Kind])
	}
	if err := jsonfile.Validate(data); err != nil {
		return nil, atFile(file, err)
	}
	start := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	if kind := jsonfile.KindOf(data[start:]); kind != "an object" {
		line, col := jsonfile.Position(data, start)
		return nil, fmt.Errorf("%s:%d:%d: the file holds %s, but Claude reads an object such as {%q: {}}", file, line, col, kind, serversKey)
	}
	provider := Code
	if o.Kind == DesktopFile {
		provider = Desktop
	}
	im := &importer{data: data, file: file, kind: o.Kind, out: &providers.ImportedFile{File: file, Format: kindFormats[o.Kind], Provider: provider}}
	top := jsonfile.Members(data, start)
	if err := im.servers(top, ""); err != nil {
		return nil, err
	}
	if o.Kind != UserFile {
		return im.out, nil
	}
	return im.out, im.projects(top, o.Project)
}

type importer struct {
	data []byte
	file string
	kind string
	out  *providers.ImportedFile
}

func (im *importer) errorAt(at int, format string, args ...any) error {
	line, col := jsonfile.Position(im.data, at)
	return fmt.Errorf("%s:%d:%d: %s", im.file, line, col, fmt.Sprintf(format, args...))
}

// servers reads the mcpServers of an object (the file, or one project of
// ~/.claude.json), and the names its _mcpgen record says mcpgen wrote.
func (im *importer) servers(obj []jsonfile.Member, project string) error {
	sm := jsonfile.Last(obj, serversKey)
	if sm == nil {
		return nil
	}
	if kind := jsonfile.KindOf(sm.Value); kind != "an object" {
		return im.errorAt(sm.ValAt, "%q is %s, but Claude reads an object of servers", serversKey, kind)
	}
	managed := map[string]bool{}
	if rm := jsonfile.Last(obj, jsonfile.RecordKey); rm != nil && jsonfile.KindOf(rm.Value) == "an object" {
		if mm := jsonfile.Last(jsonfile.Members(im.data, rm.ValAt), jsonfile.ManagedKey); mm != nil && jsonfile.KindOf(mm.Value) == "an object" {
			for _, m := range jsonfile.Members(im.data, mm.ValAt) {
				managed[m.Key] = true
			}
		}
	}
	entries := jsonfile.Members(im.data, sm.ValAt)
	for i, e := range entries {
		if &entries[i] != jsonfile.Last(entries, e.Key) {
			line, _ := jsonfile.Position(im.data, e.At)
			im.out.Notes = append(im.out.Notes, fmt.Sprintf("Server %q is written twice; line %d is left out: Claude reads the last one.", e.Key, line))
			continue
		}
		if s := im.entry(e, managed[e.Key]); s != nil {
			if project != "" {
				s.Note("A local server of project %s.", project)
			}
			im.out.Add(s)
		}
	}
	return nil
}

// projects imports the local servers of project, or notes which projects
// have some. A project without local servers, or that the file does not
// know, leaves the user's servers, with a note that says so.
func (im *importer) projects(top []jsonfile.Member, project string) error {
	pm := jsonfile.Last(top, "projects")
	var projects []jsonfile.Member
	if pm != nil && jsonfile.KindOf(pm.Value) == "an object" {
		projects = jsonfile.Members(im.data, pm.ValAt)
	}
	var withServers []string
	for _, p := range projects {
		if jsonfile.KindOf(p.Value) != "an object" {
			continue
		}
		if sm := jsonfile.Last(jsonfile.Members(im.data, p.ValAt), serversKey); sm != nil && jsonfile.KindOf(sm.Value) == "an object" {
			if ms := jsonfile.Members(im.data, sm.ValAt); len(ms) > 0 {
				names := make([]string, len(ms))
				for i, m := range ms {
					names[i] = m.Key
				}
				withServers = append(withServers, fmt.Sprintf("%s (%s)", p.Key, strings.Join(names, ", ")))
			}
		}
	}
	if project == "" {
		if len(withServers) > 0 {
			im.out.Notes = append(im.out.Notes, fmt.Sprintf("Local servers of projects are left out: %s. Pass --project PATH to import those of one project.", strings.Join(withServers, "; ")))
		}
		return nil
	}
	var found *jsonfile.Member
	for i := range projects {
		if filepath.Clean(projects[i].Key) == filepath.Clean(project) {
			found = &projects[i]
		}
	}
	if found == nil {
		// A project Claude was never opened in, or by another path: it
		// has no local servers, and the user's servers are what the
		// agent gets there.
		have := "none has local servers"
		if len(withServers) > 0 {
			have = "those with local servers: " + strings.Join(withServers, "; ")
		}
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("No project %s in the file, so no local servers (Claude keys projects by absolute path; %s): the user's servers only are imported.", project, have))
		return nil
	}
	if jsonfile.KindOf(found.Value) != "an object" {
		return im.errorAt(found.ValAt, "project %s is %s, not an object", found.Key, jsonfile.KindOf(found.Value))
	}
	user := slices.Clone(im.out.Servers)
	im.out.Servers = nil
	if err := im.servers(jsonfile.Members(im.data, found.ValAt), found.Key); err != nil {
		return err
	}
	local := im.out.Servers
	if len(local) == 0 {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("Project %s has no local servers: the user's servers only are imported.", found.Key))
	}
	// Claude Code prefers a local server to a user server of the same name.
	im.out.Servers = nil
	for _, u := range user {
		i := slices.IndexFunc(local, func(l *providers.ImportedServer) bool { return l.Server.Name == u.Server.Name })
		if i >= 0 {
			local[i].Note("Claude Code uses it instead of the user server of the same name at line %d, which is left out.", u.Line)
			continue
		}
		im.out.Servers = append(im.out.Servers, u)
	}
	im.out.Servers = append(im.out.Servers, local...)
	return nil
}

// entry reads one server. It returns nil when the server is skipped.
func (im *importer) entry(e jsonfile.Member, managed bool) *providers.ImportedServer {
	line, _ := jsonfile.Position(im.data, e.At)
	skip := func(format string, args ...any) *providers.ImportedServer {
		im.out.Skip(e.Key, line, format, args...)
		return nil
	}
	if jsonfile.KindOf(e.Value) != "an object" {
		return skip("its value is %s, not an object: Claude skips it too", jsonfile.KindOf(e.Value))
	}
	s := &manifest.Server{Name: e.Key, Enabled: true}
	imp := &providers.ImportedServer{Server: s, Line: line, Managed: managed}
	fields := jsonfile.Members(im.data, e.ValAt)
	desktop := im.kind == DesktopFile

	typ := ""
	if f := jsonfile.Last(fields, "type"); f != nil {
		if err := json.Unmarshal(f.Value, &typ); err != nil {
			return skip("\"type\" is %s, not a string: Claude skips it too", jsonfile.KindOf(f.Value))
		}
	}
	hasCommand, hasURL := jsonfile.Last(fields, "command") != nil, jsonfile.Last(fields, "url") != nil
	switch {
	case desktop && (hasURL || typ != "" && typ != "stdio"):
		return skip("Claude Desktop runs only stdio servers from its file, and skips this one")
	case typ == "stdio", typ == "" && hasCommand:
		s.Kind = manifest.KindCommand
		// No workspace context, as under Claude; the header says how to
		// add it.
		s.Context = manifest.ContextSelect{None: true}
	case typ == "http":
		s.Kind = manifest.KindRemote
	case typ == "sse":
		return skip("an SSE server: mcpgen writes streamable HTTP servers only (SSE is deprecated in MCP); keep it in this file, or move it to streamable HTTP")
	case typ == "" && hasURL:
		return skip("a url without \"type\": Claude Code skips it too; add \"type\": \"http\" if it is a streamable HTTP server")
	case typ == "":
		return skip("no command and no url: Claude skips it too")
	default:
		return skip("unknown type %q: Claude skips it too", typ)
	}

	var reason string
	value := func(key, text string) manifest.Template {
		if desktop {
			if strings.Contains(text, "${") && reason == "" {
				reason = fmt.Sprintf("%s holds the text \"${\", which Claude Desktop passes as is but mcpgen.toml would read as a variable reference (it has no escape for it)", key)
			}
			if text == "" {
				return nil
			}
			return manifest.Template{{Text: text}}
		}
		t, err := manifest.ParseTemplate(text)
		if err != nil && reason == "" {
			reason = fmt.Sprintf("%s: %v", key, err)
		}
		return t
	}
	str := func(f *jsonfile.Member) (string, bool) {
		var v string
		if err := json.Unmarshal(f.Value, &v); err != nil {
			reason = fmt.Sprintf("%q is %s, not a string: Claude skips the server too", f.Key, jsonfile.KindOf(f.Value))
			return "", false
		}
		return v, true
	}
	object := func(f *jsonfile.Member) []jsonfile.Member {
		if jsonfile.KindOf(f.Value) != "an object" {
			reason = fmt.Sprintf("%q is %s, not an object: Claude skips the server too", f.Key, jsonfile.KindOf(f.Value))
			return nil
		}
		return jsonfile.Members(im.data, f.ValAt)
	}

	stdioOnly := []string{"command", "args", "env"}
	remoteOnly := []string{"url", "headers", "headersHelper", "oauth", "tools"}
	for i := range fields {
		f := &fields[i]
		if f != jsonfile.Last(fields, f.Key) {
			continue // written twice: the last one counts
		}
		if s.Kind == manifest.KindCommand && slices.Contains(remoteOnly, f.Key) || s.Kind == manifest.KindRemote && slices.Contains(stdioOnly, f.Key) {
			imp.Note("%s left out: Claude ignores it on a %s server.", f.Key, map[bool]string{true: "stdio", false: "http"}[s.Kind == manifest.KindCommand])
			continue
		}
		switch f.Key {
		case "type":
		case "command":
			if v, ok := str(f); ok {
				if strings.TrimSpace(v) == "" {
					return skip("\"command\" is empty: Claude skips it too")
				}
				s.Command = value("command", v)
			}
		case "args":
			var args []string
			if err := json.Unmarshal(f.Value, &args); err != nil {
				reason = "\"args\" is not an array of strings: Claude skips the server too"
				continue
			}
			for i, a := range args {
				s.Args = append(s.Args, value(fmt.Sprintf("args[%d]", i), a))
			}
		case "env", "headers":
			for _, kv := range object(f) {
				v, ok := str(&kv)
				if !ok {
					continue
				}
				mv := manifest.Var{Name: kv.Key, Value: value(f.Key+"."+kv.Key, v)}
				if f.Key == "env" {
					s.Env = append(s.Env, mv)
				} else {
					s.Headers = append(s.Headers, mv)
				}
			}
		case "url":
			if v, ok := str(f); ok {
				s.URL = value("url", v)
			}
		case "timeout":
			var ms float64
			if err := json.Unmarshal(f.Value, &ms); err != nil || ms <= 0 {
				imp.Note("timeout left out: %s is not a positive number of milliseconds.", f.Value)
				continue
			}
			s.ToolTimeout = time.Duration(ms * float64(time.Millisecond))
		case "alwaysLoad", "headersHelper", "oauth", "tools":
			imp.Note("%s left out: mcpgen has no such setting; keep the server in %s by hand if it needs it.", f.Key, im.file)
		case "cwd":
			imp.Note("cwd left out: Claude ignores it and runs the server in its own working directory; add cwd to the manifest if the server needs one.")
		default:
			imp.Note("Unknown key %q left out (Claude ignores it too).", f.Key)
		}
	}
	if reason != "" {
		return skip("%s", reason)
	}
	providers.FinishImported(imp, "Claude")
	return imp
}

// atFile puts the file in front of an error that may start with LINE:COL.
func atFile(file string, err error) error {
	if msg := err.Error(); msg != "" && msg[0] >= '0' && msg[0] <= '9' {
		return fmt.Errorf("%s:%s", file, msg)
	}
	return fmt.Errorf("%s: %s", file, err)
}
