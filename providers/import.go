package providers

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
)

// An ImportedServer is one server read from an agent's config file, as the
// manifest holds it. Its values are what the agent would use: literal text
// where the agent expands nothing, ${VAR} references where it does.
type ImportedServer struct {
	Server *manifest.Server
	File   string // the file it came from, as the user named it
	Line   int    // where its entry starts in the file; 0 when unknown
	// Provider is the agent whose file it came from (its file's).
	Provider string
	// Also lists the other files (FILE:LINE) that define the same server
	// the same way.
	Also []string
	// Managed is set when the entry carries mcpgen's mark: mcpgen emitted
	// it from a manifest.
	Managed bool
	// Notes say, one sentence each, what of the entry did not come over or
	// behaves otherwise under mcpgen.
	Notes []string
	// KeyNotes are short remarks on single keys, by their path in the
	// server's table ("env.TOKEN", "bearer_token_env").
	KeyNotes map[string]string
}

// Where returns FILE:LINE (or FILE) of the server's entry.
func (s *ImportedServer) Where() string {
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	return s.File
}

// Note records a sentence about the server.
func (s *ImportedServer) Note(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// NoteKey records a remark on one key of the server.
func (s *ImportedServer) NoteKey(key, note string) {
	if s.KeyNotes == nil {
		s.KeyNotes = map[string]string{}
	}
	s.KeyNotes[key] = note
}

// A Skipped entry is a server that mcpgen cannot hold: it stays where it is,
// in its own file.
type Skipped struct {
	Name   string
	Line   int
	Reason string
}

// An ImportedFile is what one agent config file holds.
type ImportedFile struct {
	File   string // as the user named it
	Format string // what the file is, for people: "Codex config.toml"
	// Provider is the agent that reads the file: "codex", "claude",
	// "claude-desktop" (as the manifest's providers name them).
	Provider string
	Servers  []*ImportedServer
	Skipped  []Skipped
	// Notes are about the file as a whole: what import leaves in it on
	// purpose (Codex's approval tables, other projects' servers).
	Notes []string
}

// Skip records an entry that stays in the file.
func (f *ImportedFile) Skip(name string, line int, format string, args ...any) {
	f.Skipped = append(f.Skipped, Skipped{Name: name, Line: line, Reason: fmt.Sprintf(format, args...)})
}

// Add checks s against the manifest's rules and adds it to the file's
// servers; a server that the manifest would refuse (a name it does not
// allow, a variable name, a URL) is skipped with the manifest's reason.
func (f *ImportedFile) Add(s *ImportedServer) {
	s.File, s.Provider = f.File, f.Provider
	if err := CheckServer(s.Server); err != nil {
		f.Skip(s.Server.Name, s.Line, "%v", err)
		return
	}
	f.Servers = append(f.Servers, s)
}

// CheckServer reports why the manifest would refuse s: it writes s as a
// manifest of its own and reads it back, so that the rules are the
// manifest's own and cannot drift from them.
func CheckServer(s *manifest.Server) error {
	out, err := manifest.Format(&manifest.Manifest{Version: 1, Servers: []*manifest.Server{s}}, nil)
	if err != nil {
		return err
	}
	_, err = manifest.Parse(out, "check", "")
	var errs manifest.Errors
	if errors.As(err, &errs) {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Msg
			if e.Key != "" && !strings.Contains(e.Msg, e.Key) {
				msgs[i] = fmt.Sprintf("%s: %s", e.Key, e.Msg)
			}
		}
		return fmt.Errorf("mcpgen cannot hold it: %s", strings.Join(msgs, "; "))
	}
	return err
}

// CombineOptions say how Combine settles a server that two files define
// differently.
type CombineOptions struct {
	// Rename imports the later one as NAME-2 (NAME-3, ...), with a note.
	Rename bool
	// MergeTimeouts makes one server of two that differ only in their
	// timeouts, with the longer of each, and a note on whose value
	// changes.
	MergeTimeouts bool
}

// Combine puts the servers of files together, in the files' order. A server
// defined by two files the same way is kept once. A timeout that one file's
// provider has no per-server value of (Claude Code's startup timeout,
// Claude Desktop's tool timeout) is no difference: the other file's value
// is kept, and no provider's value changes. Defined differently, it is an
// error that names both places and the keys that differ, unless o says how
// to settle it.
func Combine(files []*ImportedFile, o CombineOptions) ([]*ImportedServer, error) {
	taken := map[string]bool{}
	for _, f := range files {
		for _, s := range f.Servers {
			taken[s.Server.Name] = true
		}
	}
	var out []*ImportedServer
	byName := map[string]*ImportedServer{}
	var errs []error
	for _, f := range files {
		for _, s := range f.Servers {
			name := s.Server.Name
			first, dup := byName[name]
			if !dup {
				byName[name] = s
				out = append(out, s)
				continue
			}
			diff, timeouts, adopt := compareServers(first, s)
			switch {
			case len(diff) == 0 && (len(timeouts) == 0 || o.MergeTimeouts):
				for _, t := range adopt {
					*t.field(first.Server) = t.b
				}
				if first.Server.Scope != s.Server.Scope {
					// A project's config and a user's both have it:
					// it goes to both.
					first.Server.Scope = ""
					delete(first.KeyNotes, "scope")
				}
				for _, t := range timeouts {
					mergeTimeout(first, s, t)
				}
				first.Also = append(first.Also, s.Where())
				first.Managed = first.Managed || s.Managed
				continue
			case !o.Rename && len(diff) == 0:
				errs = append(errs, timeoutsError(first, s, timeouts, freeName(name, taken)))
				continue
			case !o.Rename:
				errs = append(errs, fmt.Errorf("server %q is defined in %s and, differently (%s), in %s: remove or rename one of them in its file, or pass --rename to import the second as %s",
					name, first.Where(), strings.Join(allKeys(diff, timeouts), ", "), s.Where(), freeName(name, taken)))
				continue
			}
			s.Server.Name = freeName(name, taken)
			taken[s.Server.Name] = true
			s.Note("Renamed from %q: %s defines another server of that name (it differs in %s).", name, first.Where(), strings.Join(allKeys(diff, timeouts), ", "))
			byName[s.Server.Name] = s
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
}

// A timeoutKey is a timeout of the manifest, and the providers that take a
// per-server value of it from an emitted entry: only theirs can change.
type timeoutKey struct {
	key       string
	field     func(*manifest.Server) *time.Duration
	providers []string
}

var timeoutKeys = []timeoutKey{
	{"startup_timeout", func(s *manifest.Server) *time.Duration { return &s.StartupTimeout }, []string{"codex"}},
	{"tool_timeout", func(s *manifest.Server) *time.Duration { return &s.ToolTimeout }, []string{"codex", "claude"}},
}

// hasValue reports whether provider takes a per-server value of the key;
// a file of no known provider is taken to.
func (t timeoutKey) hasValue(provider string) bool {
	_, known := providerNames[provider]
	return !known || slices.Contains(t.providers, provider)
}

// A timeoutDiff is a timeout that two definitions give different values:
// a's (the server kept) and b's; zero is none, the provider's default.
type timeoutDiff struct {
	timeoutKey
	a, b time.Duration
}

// compareServers returns the keys whose values differ between a (the
// server kept) and b, but for the timeouts, which it returns apart: those
// whose two values would reach their providers, and those that only b has
// and a's provider has no value of (adopt: a takes b's).
func compareServers(a, b *ImportedServer) (diff []string, timeouts, adopt []timeoutDiff) {
	for _, k := range differingKeys(a.Server, b.Server) {
		if k == "scope" {
			continue // where it came from, not what it is: Combine joins them
		}
		i := slices.IndexFunc(timeoutKeys, func(t timeoutKey) bool { return t.key == k })
		if i < 0 {
			diff = append(diff, k)
			continue
		}
		t := timeoutDiff{timeoutKeys[i], *timeoutKeys[i].field(a.Server), *timeoutKeys[i].field(b.Server)}
		switch {
		case t.a == 0 && !t.hasValue(a.Provider):
			adopt = append(adopt, t)
		case t.b == 0 && !t.hasValue(b.Provider):
			// a's value stays; b's provider never had one.
		default:
			timeouts = append(timeouts, t)
		}
	}
	return diff, timeouts, adopt
}

// allKeys lists the keys of diff and of timeouts, sorted.
func allKeys(diff []string, timeouts []timeoutDiff) []string {
	keys := slices.Clone(diff)
	for _, t := range timeouts {
		keys = append(keys, t.key)
	}
	slices.Sort(keys)
	return keys
}

// providerNames are the agents as people name them.
var providerNames = map[string]string{"codex": "Codex", "claude": "Claude Code", "claude-desktop": "Claude Desktop"}

// longer is the value --merge-timeouts keeps, and what changes for whom:
// "Claude Code's tool_timeout goes from 45s to 1m30s". The change is on
// the side of the shorter value, and only if its provider has a value of
// the key.
func (t timeoutDiff) longer(a, b *ImportedServer) (time.Duration, string) {
	keep, loser, from := t.a, b, t.b
	if t.b > t.a {
		keep, loser, from = t.b, a, t.a
	}
	if !t.hasValue(loser.Provider) {
		return keep, ""
	}
	was := "its default"
	if from > 0 {
		was = durationText(from)
	}
	who := providerNames[loser.Provider]
	if who == "" {
		who = loser.File
	}
	return keep, fmt.Sprintf("%s's %s goes from %s to %s", who, t.key, was, durationText(keep))
}

// mergeTimeout gives a the longer of the two values, and a note that says
// whose changes.
func mergeTimeout(a, b *ImportedServer, t timeoutDiff) {
	keep, change := t.longer(a, b)
	*t.field(a.Server) = keep
	note := fmt.Sprintf("%s: %s in %s, %s in %s; --merge-timeouts kept the longer", t.key, durationOrNone(t.a), a.Where(), durationOrNone(t.b), b.Where())
	if change != "" {
		note += ": " + change
	}
	a.Note("%s.", note)
}

// timeoutsError refuses two definitions that differ only in timeouts
// that both reach their providers: the manifest has one value of each
// for every provider.
func timeoutsError(a, b *ImportedServer, timeouts []timeoutDiff, renamed string) error {
	var keys, values, changes []string
	for _, t := range timeouts {
		keys = append(keys, t.key)
		values = append(values, fmt.Sprintf("%s: %s and %s", t.key, durationOrNone(t.a), durationOrNone(t.b)))
		if _, change := t.longer(a, b); change != "" {
			changes = append(changes, change)
		}
	}
	them := "one of them"
	if len(timeouts) > 1 {
		them = "some of them"
	}
	return fmt.Errorf("server %q is defined in %s and, differently (%s), in %s: the manifest has one %s for every provider, so %s would change: pass --merge-timeouts to keep the longer (%s), or --rename to import the second as %s",
		a.Server.Name, a.Where(), strings.Join(values, "; "), b.Where(), strings.Join(keys, " and one "), them, strings.Join(changes, "; "), renamed)
}

func durationOrNone(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return durationText(d)
}

// durationText writes d as the manifest does: "1m30s", "45s", "2m".
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// freeName returns NAME-2, NAME-3, ...: the first that no server takes.
func freeName(name string, taken map[string]bool) string {
	for i := 2; ; i++ {
		suffix := fmt.Sprintf("-%d", i)
		n := name
		if len(n)+len(suffix) > 64 {
			n = n[:64-len(suffix)]
		}
		if !taken[n+suffix] {
			return n + suffix
		}
	}
}

// differingKeys lists the manifest keys whose lines differ between a and b,
// as Format writes them. It compares what the manifest would hold: values
// that were secrets are references by now, so no secret reaches a message.
func differingKeys(a, b *manifest.Server) []string {
	la, lb := serverLines(a), serverLines(b)
	var keys []string
	add := func(lines, other map[string]string) {
		for k, v := range lines {
			if other[k] != v && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	add(la, lb)
	add(lb, la)
	slices.Sort(keys)
	return keys
}

// serverLines returns the key = value lines that Format writes for s, by
// key (dotted within its table; a tool's keys under tools.NAME).
func serverLines(s *manifest.Server) map[string]string {
	c := *s
	c.Name = "x"
	out, err := manifest.Format(&manifest.Manifest{Version: 1, Servers: []*manifest.Server{&c}}, nil)
	lines := map[string]string{}
	if err != nil {
		lines["?"] = err.Error()
		return lines
	}
	table := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "[") {
			table = strings.TrimPrefix(strings.Trim(line, "[]"), "servers.x")
			table = strings.TrimPrefix(table, ".")
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok || table == "" && k == "version" {
			continue
		}
		if table != "" {
			k = table + "." + k
		}
		lines[k] = v
	}
	return lines
}

// FinishImported ends the import of a server of agent (its title) whose config has a
// command and headers as Claude's and the JSON agents' do: an Authorization header
// becomes bearer_token_env (BearerFromHeaders), and a relative command that names a
// directory is noted, since the agent resolved it against its own working directory.
func FinishImported(imp *ImportedServer, agent string) {
	BearerFromHeaders(imp)
	if p, ok := imp.Server.Command.Literal(); ok && p != "" && !filepath.IsAbs(p) && strings.ContainsAny(p, `/\`) {
		imp.NoteKey("command", fmt.Sprintf("relative: %s resolved it against its own working directory, mcpgen resolves it against the manifest's", agent))
	}
}

// BearerFromHeaders turns "Authorization": "Bearer ${VAR}" into bearer_token_env, which
// emit writes back in that form for Claude and the JSON agents, and as Codex's
// bearer_token_env_var.
func BearerFromHeaders(imp *ImportedServer) {
	s := imp.Server
	for i, h := range s.Headers {
		if !strings.EqualFold(h.Name, "Authorization") || len(h.Value) != 2 {
			continue
		}
		text, ref := h.Value[0], h.Value[1]
		if text.Ref != "" || !strings.EqualFold(text.Text, "Bearer ") || ref.Ref == "" || ref.HasDefault {
			continue
		}
		s.BearerTokenEnv = ref.Ref
		s.Headers = slices.Delete(s.Headers, i, i+1)
		return
	}
}
