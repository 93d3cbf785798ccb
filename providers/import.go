package providers

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgen/mcpgen/manifest"
)

// An ImportedServer is one server read from an agent's config file, as the
// manifest holds it. Its values are what the agent would use: literal text
// where the agent expands nothing, ${VAR} references where it does.
type ImportedServer struct {
	Server *manifest.Server
	File   string // the file it came from, as the user named it
	Line   int    // where its entry starts in the file; 0 when unknown
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
	File    string // as the user named it
	Format  string // what the file is, for people: "Codex config.toml"
	Servers []*ImportedServer
	Skipped []Skipped
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
	s.File = f.File
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

// Combine puts the servers of files together, in the files' order. A server
// defined by two files the same way is kept once. Defined differently, it
// is an error that names both places and the keys that differ, unless
// rename: then the later one becomes NAME-2 (NAME-3, ...), with a note.
func Combine(files []*ImportedFile, rename bool) ([]*ImportedServer, error) {
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
			diff := differingKeys(first.Server, s.Server)
			if len(diff) == 0 {
				first.Also = append(first.Also, s.Where())
				first.Managed = first.Managed || s.Managed
				continue
			}
			if !rename {
				errs = append(errs, fmt.Errorf("server %q is defined in %s and, differently (%s), in %s: remove or rename one of them in its file, or pass --rename to import the second as %s",
					name, first.Where(), strings.Join(diff, ", "), s.Where(), freeName(name, taken)))
				continue
			}
			s.Server.Name = freeName(name, taken)
			taken[s.Server.Name] = true
			s.Note("Renamed from %q: %s defines another server of that name (it differs in %s).", name, first.Where(), strings.Join(diff, ", "))
			byName[s.Server.Name] = s
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
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
