package files

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/statefile"
	"github.com/mcpgen/mcpgen/mcp"
)

// tools returns the server's tools, without the writing ones when readOnly.
func tools(w *workspace, readOnly bool) []*mcp.Tool {
	ts := []*mcp.Tool{listTool(w), readTool(w), searchTool(w), infoTool(w)}
	if !readOnly {
		ts = append(ts, writeTool(w), editTool(w))
	}
	return ts
}

func hint(b bool) *bool { return &b }

// readOnlyHints are the annotations of the tools that change nothing.
func readOnlyHints(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: hint(true), OpenWorldHint: hint(false)}
}

// pathDoc is how every tool explains its path argument.
const pathDoc = `Relative to the workspace root; an absolute path must lie inside the workspace. ` +
	`A name shown quoted in a result (odd bytes) may be passed back exactly as shown.`

func listTool(w *workspace) *mcp.Tool {
	return &mcp.Tool{
		Name:  "list_directory",
		Title: "List directory",
		Description: fmt.Sprintf("List the entries of a directory in the workspace, sorted by name: "+
			"directories end in /, files show their size, symlinks show their target and are not followed. "+
			"At most %d entries and %d KiB are listed (the result says when there are more).", MaxListEntries, MaxResultBytes>>10),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"The directory. Default \".\", the workspace root. ` + pathDoc + `"}},` +
			`"additionalProperties":false}`),
		Annotations: readOnlyHints("List directory"),
		Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := parseArguments(req.Arguments, "path")
			name := a.string("path", false)
			if a.err != nil {
				return nil, a.err
			}
			if name == "" {
				name = "."
			}
			l, err := w.list(ctx, name)
			if err != nil {
				return nil, err
			}
			return text(formatListing(w, l)), nil
		},
	}
}

func readTool(w *workspace) *mcp.Tool {
	return &mcp.Tool{
		Name:  "read_file",
		Title: "Read file",
		Description: fmt.Sprintf("Read a text file of the workspace, a window of lines at a time: "+
			"from line offset (1 is the first), at most limit lines (default %d), and never more than %d KiB. "+
			"When the window does not reach the end, the result says so and gives the offset to read on. "+
			"One call reads at most the first %d MiB of a file, the lines skipped to reach offset included. "+
			"Binary files are refused.", DefaultReadLines, MaxResultBytes>>10, MaxScanBytes>>20),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"The file. ` + pathDoc + `"},` +
			`"offset":{"type":"integer","minimum":1,"description":"The first line to return; 1 (the default) is the first line of the file."},` +
			`"limit":{"type":"integer","minimum":1,"description":"The most lines to return (default ` + fmt.Sprint(DefaultReadLines) + `)."}},` +
			`"required":["path"],"additionalProperties":false}`),
		Annotations: readOnlyHints("Read file"),
		Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := parseArguments(req.Arguments, "path", "offset", "limit")
			name := a.string("path", true)
			offset := a.integer("offset", 1, 1)
			limit := a.integer("limit", DefaultReadLines, 1)
			if a.err != nil {
				return nil, a.err
			}
			win, err := w.read(ctx, name, offset, limit)
			if err != nil {
				return nil, err
			}
			return windowResult(name, win), nil
		},
	}
}

func writeTool(w *workspace) *mcp.Tool {
	return &mcp.Tool{
		Name:  "write_file",
		Title: "Write file",
		Description: "Create a file in the workspace, or replace the whole content of an existing one, " +
			"creating missing parent directories. The write is atomic (readers see the old content or the new) " +
			"and a replaced file keeps its permissions; a symlink inside the workspace is followed and kept. " +
			"To change part of a file, use edit_file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"The file to create or replace. ` + pathDoc + `"},` +
			`"content":{"type":"string","description":"The complete new content of the file."}},` +
			`"required":["path","content"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{
			Title:           "Write file",
			ReadOnlyHint:    hint(false),
			DestructiveHint: hint(true),
			IdempotentHint:  hint(true),
			OpenWorldHint:   hint(false),
		},
		Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := parseArguments(req.Arguments, "path", "content")
			name := a.string("path", true)
			content := a.string("content", true)
			if a.err != nil {
				return nil, a.err
			}
			created, err := w.write(ctx, name, []byte(content))
			if err != nil {
				return nil, err
			}
			verb := "replaced"
			if created {
				verb = "created"
			}
			return text(fmt.Sprintf("%s %s (%s)", verb, shown(name), sizeText(int64(len(content))))), nil
		},
	}
}

func editTool(w *workspace) *mcp.Tool {
	return &mcp.Tool{
		Name:  "edit_file",
		Title: "Edit file",
		Description: fmt.Sprintf("Replace an exact piece of text in a text file of the workspace. "+
			"old_text must match the file exactly, whitespace and indentation included, and occur exactly once "+
			"(include surrounding lines to make it unique), unless replace_all is true. "+
			"When it occurs zero times or more than once, nothing changes and the result says where to look. "+
			"Files up to %d MiB; the write is atomic and keeps the file's permissions.", MaxEditBytes>>20),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"The file to edit. ` + pathDoc + `"},` +
			`"old_text":{"type":"string","minLength":1,"description":"The exact text to replace, as it is in the file."},` +
			`"new_text":{"type":"string","description":"The text to put in its place (may be empty to delete)."},` +
			`"replace_all":{"type":"boolean","description":"Replace every occurrence instead of requiring exactly one (default false)."}},` +
			`"required":["path","old_text","new_text"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{
			Title:           "Edit file",
			ReadOnlyHint:    hint(false),
			DestructiveHint: hint(true),
			IdempotentHint:  hint(false),
			OpenWorldHint:   hint(false),
		},
		Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := parseArguments(req.Arguments, "path", "old_text", "new_text", "replace_all")
			name := a.string("path", true)
			oldText := a.string("old_text", true)
			newText := a.string("new_text", true)
			all := a.boolean("replace_all")
			if a.err != nil {
				return nil, a.err
			}
			e, err := w.edit(ctx, name, oldText, newText, all)
			if err != nil {
				return nil, err
			}
			s := fmt.Sprintf("edited %s: replaced the occurrence at line %d", shown(name), e.line)
			if e.count > 1 {
				s = fmt.Sprintf("edited %s: replaced %d occurrences, the first at line %d", shown(name), e.count, e.line)
			}
			if e.crlf {
				s += " (matched with the file's CRLF line endings, which are kept)"
			}
			return text(s), nil
		},
	}
}

func searchTool(w *workspace) *mcp.Tool {
	return &mcp.Tool{
		Name:  "search_files",
		Title: "Search files",
		Description: fmt.Sprintf("Search the workspace below a directory with a Go (RE2) regular expression, "+
			"matched against each line of text files and against each path (relative to the workspace root, e.g. _test\\.go$). "+
			"Use (?i) for case-insensitive matching. Results give paths relative to the workspace root, with line numbers for lines. "+
			"Symlinks are not followed and .git directories are skipped. "+
			"At most %d matches are returned, each line cut to %d bytes, in at most %d KiB; "+
			"binary files and files over %d MiB are skipped, and the walk stops after %d entries, %d directory levels or %d MiB of file contents read; "+
			"the result says when any of this happened.",
			MaxSearchMatches, maxMatchText, MaxResultBytes>>10, MaxSearchFileBytes>>20, MaxSearchEntries, maxSearchDepth, MaxScanBytes>>20),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","minLength":1,"description":"A Go regular expression (RE2 syntax)."},` +
			`"path":{"type":"string","description":"The directory to search below, or one file. Default \".\", the whole workspace. ` + pathDoc + `"},` +
			`"match":{"type":"string","enum":["both","contents","names"],"description":"What the pattern is matched against: lines of files (contents), paths (names), or both (the default)."},` +
			`"glob":{"type":"string","description":"Only search files whose name matches this shell pattern, e.g. *.go."}},` +
			`"required":["pattern"],"additionalProperties":false}`),
		Annotations: readOnlyHints("Search files"),
		Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := parseArguments(req.Arguments, "pattern", "path", "match", "glob")
			pattern := a.string("pattern", true)
			q := query{base: a.string("path", false), glob: a.string("glob", false)}
			what := a.string("match", false)
			if a.err != nil {
				return nil, a.err
			}
			switch what {
			case "", "both":
				q.names, q.contents = true, true
			case "contents":
				q.contents = true
			case "names":
				q.names = true
			default:
				return nil, fmt.Errorf(`argument "match" must be "both", "contents" or "names", not %q`, what)
			}
			if q.base == "" {
				q.base = "."
			}
			if err := checkGlob(q.glob); err != nil {
				return nil, err
			}
			re, err := compilePattern(pattern)
			if err != nil {
				return nil, err
			}
			q.re = re
			f, err := w.search(ctx, q)
			if err != nil {
				return nil, err
			}
			return text(formatFound(pattern, f)), nil
		},
	}
}

func infoTool(w *workspace) *mcp.Tool {
	return &mcp.Tool{
		Name:  "file_info",
		Title: "File info",
		Description: "Describe one entry of the workspace: its type, size, permissions and modification time. " +
			"For a symlink (not followed), also its target and what is there; symlinks that lead outside the workspace are refused.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"The file, directory or symlink. ` + pathDoc + `"}},` +
			`"required":["path"],"additionalProperties":false}`),
		Annotations: readOnlyHints("File info"),
		Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := parseArguments(req.Arguments, "path")
			name := a.string("path", true)
			if a.err != nil {
				return nil, a.err
			}
			in, err := w.info(name)
			if err != nil {
				return nil, err
			}
			return text(formatInfo(in)), nil
		},
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(s)}}
}

// A page is a result's text, kept under MaxResultBytes: lines that do not
// fit are counted, not written.
type page struct {
	b       strings.Builder
	dropped int
}

func (p *page) line(s string) {
	if p.dropped > 0 || p.b.Len()+len(s)+1 > MaxResultBytes-1<<10 {
		p.dropped++
		return
	}
	p.b.WriteString(s)
	p.b.WriteByte('\n')
}

// note writes a closing remark, which always fits.
func (p *page) note(format string, args ...any) {
	fmt.Fprintf(&p.b, "["+format+"]\n", args...)
}

func (p *page) String() string { return strings.TrimSuffix(p.b.String(), "\n") }

func formatListing(w *workspace, l *listing) string {
	var p page
	where := "directory " + shown(l.dir)
	if l.dir == "." {
		where = "the workspace root " + w.dir
	}
	if l.total == 0 {
		return where + " is empty"
	}
	p.line(fmt.Sprintf("%s holds %s:", where, count(l.total, "entry", "entries")))
	for _, e := range l.entries {
		p.line(entryLine(e))
	}
	if shown := len(l.entries) - p.dropped; shown < l.total {
		p.note("showing the first %d of %d entries, by name; search_files with match \"names\" finds the others", shown, l.total)
	}
	return p.String()
}

func entryLine(e entry) string {
	name := quote(e.name)
	switch t := e.mode.Type(); {
	case e.gone:
		return name + "  (vanished while listing)"
	case t == 0:
		return name + "  " + sizeText(e.size)
	case t == fs.ModeDir:
		return name + "/"
	case t == fs.ModeSymlink:
		s := name + " -> " + quote(e.target)
		if e.why != "" {
			return s + "  (symlink; " + e.why + ")"
		}
		return s + "  (symlink)"
	default:
		return name + "  (" + statefile.Kind(e.mode) + ")"
	}
}

// windowResult shows a window of a file, with a note when the file holds
// more than the window or when the window is not the whole file.
func windowResult(name string, win *window) *mcp.CallToolResult {
	var note string
	lines := lineRange(win.first, win.first+win.lines-1)
	switch {
	case win.lines == 0:
		return text(fmt.Sprintf("[file %s is empty]", shown(name)))
	case win.spent && win.cut:
		note = fmt.Sprintf("[line %d goes on past the %s that read_file reads per call; only its start is shown, and read_file cannot reach the lines after it]", win.first, sizeText(win.budget))
	case win.spent:
		note = fmt.Sprintf("[%s of %s (%s) shown; read_file stopped at the %s it reads per call: read_file with offset %d reads on]", lines, shown(name), sizeText(win.size), sizeText(win.budget), win.next())
	case win.cut && win.more:
		note = fmt.Sprintf("[line %d is longer than %d KiB and only its start is shown; read_file with offset %d reads on after it]", win.first, readBudget>>10, win.next())
	case win.cut:
		note = fmt.Sprintf("[line %d is longer than %d KiB and only its start is shown; it is the last line of the file]", win.first, readBudget>>10)
	case win.more && win.full:
		note = fmt.Sprintf("[%s of %s (%s) shown, cut at the %d KiB result limit; read_file with offset %d reads on]", lines, shown(name), sizeText(win.size), MaxResultBytes>>10, win.next())
	case win.more:
		note = fmt.Sprintf("[%s of %s (%s) shown; the file goes on: read_file with offset %d reads on]", lines, shown(name), sizeText(win.size), win.next())
	case win.first > 1:
		note = fmt.Sprintf("[%s of %s shown; this is the end of the file]", lines, shown(name))
	default:
		return text(string(win.text))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(win.text)), mcp.TextContent(note)}}
}

// lineRange writes "line 7" or "lines 7-9".
func lineRange(first, last int) string {
	if first == last {
		return fmt.Sprintf("line %d", first)
	}
	return fmt.Sprintf("lines %d-%d", first, last)
}

func formatFound(pattern string, f *found) string {
	var p page
	where := shown(f.base)
	if f.base == "." {
		where = "the workspace"
	}
	searched := "names only"
	if f.query.contents {
		searched = count(f.files, "file", "files") + " searched"
	}
	if len(f.matches) == 0 {
		p.line(fmt.Sprintf("no matches for %q in %s (%s)", pattern, where, searched))
	} else {
		more := ""
		if f.limited {
			more = " (the first ones)"
		}
		p.line(fmt.Sprintf("%s%s for %q in %s (%s):", count(len(f.matches), "match", "matches"), more, pattern, where, searched))
	}
	for _, m := range f.matches {
		p.line(matchLine(m))
	}
	if p.dropped > 0 {
		p.note("%d more matches not shown: the result is limited to %d KiB; narrow the pattern, the path or the glob", p.dropped, MaxResultBytes>>10)
	}
	if f.limited {
		p.note("stopped at %d matches; narrow the pattern, the path or the glob to see the rest", MaxSearchMatches)
	}
	if f.stopped {
		p.note("stopped after visiting %d entries; search a smaller directory to cover the rest", MaxSearchEntries)
	}
	if f.spent {
		p.note("stopped after reading %s of file contents, the most one search reads; search a smaller directory or give a glob to cover the rest", sizeText(f.budget))
	}
	var skipped []string
	if f.large > 0 {
		skipped = append(skipped, fmt.Sprintf("%s over %d MiB", count(f.large, "file", "files"), MaxSearchFileBytes>>20))
	}
	if f.binary > 0 {
		skipped = append(skipped, count(f.binary, "binary file", "binary files"))
	}
	if f.deep > 0 {
		skipped = append(skipped, count(f.deep, "directory", "directories")+fmt.Sprintf(" deeper than %d levels", maxSearchDepth))
	}
	if f.failed > 0 {
		skipped = append(skipped, count(f.failed, "entry", "entries")+" that could not be read")
	}
	if len(skipped) > 0 {
		p.note("skipped %s", strings.Join(skipped, ", "))
	}
	return p.String()
}

func matchLine(m match) string {
	name := quote(m.path)
	switch {
	case m.line > 0:
		return fmt.Sprintf("%s:%d: %s", name, m.line, m.text)
	case m.mode.IsDir():
		return name + "/"
	case m.mode&fs.ModeSymlink != 0:
		return name + "  (symlink)"
	}
	return name
}

func formatInfo(in *info) string {
	var b strings.Builder
	line := func(key, value string) { fmt.Fprintf(&b, "%s: %s\n", key, value) }
	line("path", quote(in.path))
	details := in.stat
	if in.stat.Mode()&fs.ModeSymlink != 0 {
		line("type", "symlink")
		line("target", quote(in.target))
		if in.dest == nil {
			line("leads to", quote(in.resolved)+", which does not exist")
		} else {
			line("leads to", quote(in.resolved)+", "+statefile.Kind(in.dest.Mode()))
			details = in.dest
		}
	} else {
		line("type", strings.TrimPrefix(strings.TrimPrefix(statefile.Kind(in.stat.Mode()), "a "), "an "))
	}
	if details.Mode().IsRegular() {
		line("size", fmt.Sprintf("%d bytes", details.Size()))
	}
	line("mode", fmt.Sprintf("%s (%04o)", details.Mode(), details.Mode().Perm()))
	line("modified", details.ModTime().UTC().Format(time.RFC3339))
	return strings.TrimSuffix(b.String(), "\n")
}

// count writes n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// checkGlob reports a malformed glob argument.
func checkGlob(glob string) error {
	if glob == "" {
		return nil
	}
	if _, err := path.Match(glob, ""); err != nil {
		return fmt.Errorf("argument \"glob\" %q is not a valid pattern (use *, ? and [a-z], e.g. *.go)", glob)
	}
	return nil
}
