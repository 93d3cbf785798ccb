package codex

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/mcpgen/mcpgen/providers"
)

// Entry is one server that mcpgen owns.
type Entry struct {
	Name string
	// Body holds the table's key/value lines, without header or marker, for example
	// "command = \"npx\"\nargs = [\"-y\"]\n". It may hold comments, but not as its last line,
	// and no table header and no tools key (Codex's approval tables are the user's).
	Body []byte
}

// MergeOptions changes how Merge treats servers that mcpgen does not own.
type MergeOptions struct {
	// Force replaces or removes servers written or edited by hand instead of reporting them
	// as conflicts.
	Force bool
}

// markerPrefix starts the comment line that marks a table as mcpgen's own; the fingerprint of
// the table's content follows it.
const markerPrefix = "# mcpgen: managed entry "

// markerSuffix ends the marker that Merge writes; reading a marker ignores it.
const markerSuffix = "; edit the manifest and re-run mcpgen emit"

// markerRE reads a marker: the prefix and a fingerprint, whatever follows.
var markerRE = regexp.MustCompile("^" + regexp.QuoteMeta(markerPrefix) + "(" + providers.FingerprintPrefix + "[0-9a-fA-F]{12})")

// Merge returns existing with the servers of entries written in, each as a table marked as
// mcpgen's own, and the servers that mcpgen owns but entries no longer lists removed (with
// their [mcp_servers.NAME.tools.TOOL] tables). entries is the full set, in order.
//
// A server already in the file keeps its place: its marker and body are rewritten, its header
// and its approval tables ([mcp_servers.NAME.tools.TOOL], which Codex writes) are kept. New
// servers go right after the last mcp_servers table, or at the end of the file. Every other
// byte stays as it was: comments, blank lines, other tables, quoting, CRLF line endings.
//
// A server that entries names but someone wrote or edited by hand, and an edited server that
// would be removed, are conflicts: Merge returns a *providers.ConflictError listing them all,
// unless opts.Force. Merge of empty input is the fresh rendering of entries. When nothing
// changes, Merge returns a copy of existing. Errors carry line:column, and never come with
// output.
func Merge(existing []byte, entries []Entry, opts MergeOptions) ([]byte, error) {
	eol := lineEnding(existing)
	blocks, err := prepareBlocks(entries, eol)
	if err != nil {
		return nil, err
	}
	doc, err := parse(existing)
	if err != nil {
		return nil, err
	}
	p, err := doc.plan(blocks, opts.Force)
	if err != nil {
		return nil, err
	}
	if p.isEmpty() {
		return bytes.Clone(existing), nil
	}
	out := doc.apply(p)
	if err := verify(doc, p, out); err != nil {
		return nil, err
	}
	return out, nil
}

// lineEnding returns the file's line ending: that of its first line, "\n" when it has none.
func lineEnding(data []byte) string {
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// block is an entry made ready to write.
type block struct {
	name   string
	body   []byte         // key/value lines in the file's line ending, each one ended
	value  map[string]any // body, decoded
	marker string         // the marker line, ended
}

// prepareBlocks checks the entries and turns them into blocks.
func prepareBlocks(entries []Entry, eol string) ([]block, error) {
	blocks := make([]block, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	var p unstable.Parser
	p.KeepComments = true
	for _, e := range entries {
		if err := providers.CheckEntryName(e.Name, seen); err != nil {
			return nil, err
		}
		b, err := prepareEntry(&p, e, eol)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// prepareEntry normalises the body of e (line endings, no blank lines around it, a final
// line ending) and checks, with p, that it is a table's content that Merge can find again.
func prepareEntry(p *unstable.Parser, e Entry, eol string) (block, error) {
	body := bytes.ReplaceAll(e.Body, []byte("\r\n"), []byte("\n"))
	body = trimBlankLines(body)
	if len(body) > 0 {
		body = append(body, '\n')
	}
	if eol != "\n" {
		body = bytes.ReplaceAll(body, []byte("\n"), []byte(eol))
	}
	p.Reset(body)
	last := unstable.Invalid
	for p.NextExpression() {
		expr := p.Expression()
		if expr.Kind == unstable.Table || expr.Kind == unstable.ArrayTable {
			line, col := position(body, headerStart(body, expr))
			return block{}, fmt.Errorf("entry %q: body %d:%d: a table header cannot be part of a body: write the table's key/values only", e.Name, line, col)
		}
		last = expr.Kind
	}
	if err := p.Error(); err != nil {
		return block{}, fmt.Errorf("entry %q: body %w", e.Name, syntaxError(body, err))
	}
	if last == unstable.Comment {
		return block{}, fmt.Errorf("entry %q: body ends with a comment, which would read as part of the next table: end it with a key/value", e.Name)
	}
	value := map[string]any{}
	if err := toml.Unmarshal(body, &value); err != nil {
		return block{}, fmt.Errorf("entry %q: body %w", e.Name, decodeError(err))
	}
	if _, ok := value["tools"]; ok {
		return block{}, fmt.Errorf("entry %q: body sets tools, which belong to Codex's approval tables: leave them out", e.Name)
	}
	marker := markerPrefix + providers.Fingerprint(value) + markerSuffix + eol
	return block{name: e.Name, body: body, value: value, marker: marker}, nil
}

// trimBlankLines drops the blank lines at both ends of b, and any whitespace after its last
// line.
func trimBlankLines(b []byte) []byte {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 || len(bytes.Trim(b[:i], " \t\r")) > 0 {
			break
		}
		b = b[i+1:]
	}
	b = bytes.TrimRight(b, " \t\r\n")
	return b
}

// header returns the table header of a new block's server.
func (b block) header(eol string) string {
	return "[mcp_servers." + tomlKey(b.name) + "]" + eol
}

// text returns a new block: marker, header and body.
func (b block) text(eol string) []byte {
	out := make([]byte, 0, len(b.marker)+len(b.body)+len(b.name)+16)
	out = append(out, b.marker...)
	out = append(out, b.header(eol)...)
	return append(out, b.body...)
}

// unitKind says what a unit of the file is.
type unitKind uint8

const (
	blankUnit      unitKind = iota // a line of nothing but spaces
	commentUnit                    // a line of nothing but a comment
	tableUnit                      // [table] header
	arrayTableUnit                 // [[array.table]] header
	keyValueUnit                   // key = value, maybe over several lines
)

// unit is one top-level expression of the file, or one blank line, with the whole lines it
// spans (trailing comment and line ending included).
type unit struct {
	kind       unitKind
	start, end int      // bytes of data
	at         int      // offset of the first key or of the comment, for positions
	path       []string // headers: the table's key; key/values: the full key, table included
	section    int      // the header whose table holds a key/value, -1 for the root table
	lastInSect int      // headers: the last unit of the section that is not a comment or blank
	valueKind  unstable.Kind
}

// part is a run of units that belongs to one server: a header and the key/values of its
// table (with the comments and blank lines between them), or a key/value outside any table of
// the server.
type part struct {
	first, last int  // unit indexes, inclusive
	tools       bool // under mcp_servers.NAME.tools
	header      bool
}

// server is what the file holds for one name under mcp_servers.
type server struct {
	name     string
	parts    []part
	main     int    // index in parts of the [mcp_servers.NAME] table, -1 if none
	marker   int    // unit index of the marker line above the main table, -1 if none
	markerFP string // the fingerprint that the marker records
	value    any    // decoded
	state    state
}

// document is the existing file cut into units.
type document struct {
	data      []byte
	eol       string
	units     []unit
	rootLast  int // last key/value of the root table, -1 if none
	decoded   map[string]any
	servers   map[string]*server
	order     []*server // by first appearance
	container int       // a unit that makes mcp_servers something other than a table, -1
}

// parse cuts data into units and decodes it. Invalid TOML is an error with its position.
func parse(data []byte) (*document, error) {
	d := &document{data: data, eol: lineEnding(data), rootLast: -1, container: -1, servers: map[string]*server{}}
	var p unstable.Parser
	p.KeepComments = true
	p.Reset(data)
	var table []string
	section := -1
	pos := 0
	for p.NextExpression() {
		u, last := d.newUnit(p.Expression(), table, section)
		u.start = max(lineStart(data, u.at), pos)
		u.end = lineEnd(data, last)
		d.addBlanks(pos, u.start, section)
		pos = u.end
		i := len(d.units)
		switch u.kind {
		case tableUnit, arrayTableUnit:
			table, section = u.path, i
			u.section, u.lastInSect = i, i
		case keyValueUnit:
			if section < 0 {
				d.rootLast = i
			} else {
				d.units[section].lastInSect = i
			}
		}
		d.units = append(d.units, u)
	}
	if err := p.Error(); err != nil {
		return nil, syntaxError(data, err)
	}
	d.addBlanks(pos, len(data), section)
	d.decoded = map[string]any{}
	if err := toml.Unmarshal(data, &d.decoded); err != nil {
		return nil, decodeError(err)
	}
	d.findServers()
	return d, nil
}

// newUnit describes a top-level expression, found in the table named table (a header at
// index section). It returns the unit without its extent, and the offset of the expression's
// last byte that matters (its line ends after it).
func (d *document) newUnit(e *unstable.Node, table []string, section int) (unit, int) {
	u := unit{section: section, lastInSect: -1}
	switch e.Kind {
	case unstable.Comment:
		u.kind = commentUnit
		u.at = int(e.Raw.Offset)
		return u, int(e.Raw.Offset + e.Raw.Length)
	case unstable.Table, unstable.ArrayTable:
		u.kind = tableUnit
		if e.Kind == unstable.ArrayTable {
			u.kind = arrayTableUnit
		}
		u.at = headerStart(d.data, e)
		keys, end := keyParts(e, nil)
		u.path = keys
		return u, end
	default:
		u.kind = keyValueUnit
		u.at = int(e.Raw.Offset)
		u.path, _ = keyParts(e, table)
		u.valueKind = e.Value().Kind
		return u, int(e.Raw.Offset + e.Raw.Length)
	}
}

// keyParts returns the decoded parts of e's key after prefix, and the offset where the key
// ends.
func keyParts(e *unstable.Node, prefix []string) ([]string, int) {
	path := slices.Clip(prefix)
	end := 0
	it := e.Key()
	for it.Next() {
		k := it.Node()
		path = append(path, string(k.Data))
		end = int(k.Raw.Offset + k.Raw.Length)
	}
	return path, end
}

// headerStart returns the offset of the '[' that opens the table header e.
func headerStart(data []byte, e *unstable.Node) int {
	it := e.Key()
	it.Next()
	at := int(it.Node().Raw.Offset)
	if i := bytes.LastIndexByte(data[:at], '['); i >= 0 {
		at = i
		if e.Kind == unstable.ArrayTable && i > 0 && data[i-1] == '[' {
			at = i - 1
		}
	}
	return at
}

// addBlanks adds a blank unit for each line of data[from:to], which holds only whitespace.
func (d *document) addBlanks(from, to, section int) {
	for from < to {
		end := lineEnd(d.data, from)
		if end > to {
			end = to
		}
		d.units = append(d.units, unit{kind: blankUnit, start: from, end: end, at: from, section: section, lastInSect: -1})
		from = end
	}
}

// lineStart returns the offset of the line that holds offset at.
func lineStart(data []byte, at int) int {
	return bytes.LastIndexByte(data[:at], '\n') + 1
}

// lineEnd returns the offset just past the line ending that follows offset at, or the end
// of data.
func lineEnd(data []byte, at int) int {
	if at >= len(data) {
		return len(data)
	}
	i := bytes.IndexByte(data[at:], '\n')
	if i < 0 {
		return len(data)
	}
	return at + i + 1
}

// findServers groups the units under mcp_servers by server.
func (d *document) findServers() {
	decodedServers, _ := d.decoded["mcp_servers"].(map[string]any)
	for i := range d.units {
		u := &d.units[i]
		if u.kind == blankUnit || u.kind == commentUnit || len(u.path) == 0 || u.path[0] != "mcp_servers" {
			continue
		}
		if len(u.path) == 1 {
			if u.kind != tableUnit && d.container < 0 {
				d.container = i
			}
			continue
		}
		if u.kind == keyValueUnit && u.section >= 0 && len(d.units[u.section].path) >= 2 {
			continue // part of its header's run
		}
		s := d.servers[u.path[1]]
		if s == nil {
			s = &server{name: u.path[1], main: -1, marker: -1, value: decodedServers[u.path[1]]}
			d.servers[s.name] = s
			d.order = append(d.order, s)
		}
		pt := part{first: i, last: i, tools: len(u.path) >= 3 && u.path[2] == "tools", header: u.kind != keyValueUnit}
		if pt.header {
			pt.last = u.lastInSect
		}
		if u.kind == tableUnit && len(u.path) == 2 {
			s.main = len(s.parts)
			if fp, ok := d.markerAbove(i); ok {
				s.marker, s.markerFP = i-1, fp
			}
		}
		s.parts = append(s.parts, pt)
	}
	for _, s := range d.order {
		s.state = s.classify()
	}
}

// markerAbove returns the fingerprint of the marker on the line right above unit i.
func (d *document) markerAbove(i int) (string, bool) {
	if i == 0 || d.units[i-1].kind != commentUnit {
		return "", false
	}
	u := d.units[i-1]
	m := markerRE.FindSubmatch(d.data[u.at:u.end])
	if m == nil {
		return "", false
	}
	return strings.ToLower(string(m[1])), true
}

// state is how the file's copy of a server relates to mcpgen.
type state uint8

const (
	absent      state = iota // not in the file, or only its approval tables
	owned                    // marked, and unchanged since mcpgen wrote it
	edited                   // marked, changed since
	handWritten              // not marked
)

// classify tells how s relates to mcpgen.
func (s *server) classify() state {
	if s.marker >= 0 {
		if providers.Fingerprint(withoutTools(s.value)) == s.markerFP {
			return owned
		}
		return edited
	}
	for _, pt := range s.parts {
		if !pt.tools {
			return handWritten
		}
	}
	return absent
}

// withoutTools returns a server's value without its approval tables.
func withoutTools(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if _, ok := m["tools"]; !ok {
		return m
	}
	c := make(map[string]any, len(m))
	for k, e := range m {
		if k != "tools" {
			c[k] = e
		}
	}
	return c
}

// plan is what Merge changes, by unit.
type plan struct {
	drop     []bool         // units to leave out
	replace  map[int]change // by first unit: the units to replace and their new text
	insertAt int            // unit index before which insert goes
	insert   []block        // new servers, in order
	written  []block        // every entry
	removed  []string       // servers removed altogether
}

// change replaces units [first, end) with text.
type change struct {
	end  int
	text []byte
}

func (p *plan) isEmpty() bool {
	return len(p.replace) == 0 && len(p.insert) == 0 && !slices.Contains(p.drop, true)
}

// plan decides what happens to each server, and reports conflicts.
func (d *document) plan(blocks []block, force bool) (*plan, error) {
	if len(blocks) > 0 && d.container >= 0 {
		return nil, d.containerError()
	}
	wanted := make(map[string]*block, len(blocks))
	for i := range blocks {
		wanted[blocks[i].name] = &blocks[i]
	}
	if err := d.conflicts(wanted, force); err != nil {
		return nil, err
	}
	p := &plan{drop: make([]bool, len(d.units)), replace: map[int]change{}, insertAt: d.anchor(), written: blocks}
	for _, b := range blocks {
		s := d.servers[b.name]
		if err := d.write(p, b, s); err != nil {
			return nil, err
		}
	}
	for _, s := range d.order {
		if wanted[s.name] != nil {
			continue
		}
		if s.state == owned || s.state == edited && force {
			d.remove(p, s)
			p.removed = append(p.removed, s.name)
		}
	}
	return p, nil
}

// conflicts returns a *providers.ConflictError for the servers that Merge would overwrite or
// delete without owning them, unless force.
func (d *document) conflicts(wanted map[string]*block, force bool) error {
	if force {
		return nil
	}
	var cs []providers.Conflict
	for _, s := range d.order {
		switch {
		case s.state == handWritten && wanted[s.name] != nil:
			cs = append(cs, providers.Conflict{Name: s.name, Reason: providers.ReasonHandWritten, Line: d.line(s.firstUnit())})
		case s.state == edited:
			cs = append(cs, providers.Conflict{Name: s.name, Reason: providers.ReasonEdited, Line: d.line(s.firstUnit())})
		}
	}
	if len(cs) > 0 {
		return &providers.ConflictError{Conflicts: cs}
	}
	return nil
}

// firstUnit returns the unit where s starts: its marker, or its first part.
func (s *server) firstUnit() int {
	if s.marker >= 0 {
		return s.marker
	}
	first := s.parts[0].first
	for _, pt := range s.parts {
		first = min(first, pt.first)
	}
	return first
}

// write plans entry b over the file's server s (nil if none): in place of its main table if
// it has one, else with the new servers.
func (d *document) write(p *plan, b block, s *server) error {
	if s == nil || s.state == absent {
		// Nothing to replace; approval tables left from an earlier server stay.
		if err := d.checkToolsPlacement(s); err != nil {
			return err
		}
		p.insert = append(p.insert, b)
		return nil
	}
	for i, pt := range s.parts {
		if !pt.tools && i != s.main {
			d.dropPart(p, pt)
		}
	}
	if s.main < 0 {
		if err := d.checkToolsPlacement(s); err != nil {
			return err
		}
		p.insert = append(p.insert, b)
		return nil
	}
	main := s.parts[s.main]
	first := main.first
	if s.marker >= 0 {
		first = s.marker
	}
	p.replace[first] = change{end: main.last + 1, text: d.rewriteMain(b, main)}
	return nil
}

// checkToolsPlacement reports approval settings of s written as dotted keys outside its
// tables: they define the table mcp_servers.NAME, so a [mcp_servers.NAME] header added later
// would be invalid TOML.
func (d *document) checkToolsPlacement(s *server) error {
	if s == nil {
		return nil
	}
	for _, pt := range s.parts {
		if pt.tools && !pt.header {
			line, col := position(d.data, d.units[pt.first].at)
			key := tomlKey(s.name)
			return fmt.Errorf("%d:%d: server %q has tool settings written as dotted keys outside its tables, so mcpgen cannot add [mcp_servers.%s] after them: move them into [mcp_servers.%s.tools.TOOL] tables, then re-run",
				line, col, s.name, key, key)
		}
	}
	return nil
}

// rewriteMain returns the new text of a server's main table: the marker, the header as it
// was, the new body, and the approval settings that the table held.
func (d *document) rewriteMain(b block, main part) []byte {
	eol := d.eol
	h := d.units[main.first]
	out := make([]byte, 0, len(b.marker)+(h.end-h.start)+len(b.body)+2)
	out = append(out, b.marker...)
	out = appendLine(out, d.data[h.start:h.end], eol)
	out = append(out, b.body...)
	for i := main.first + 1; i <= main.last; i++ {
		u := d.units[i]
		if u.kind == keyValueUnit && len(u.path) >= 3 && u.path[2] == "tools" {
			out = appendLine(out, d.data[u.start:u.end], eol)
		}
	}
	return out
}

// appendLine appends line, and eol if it has no line ending.
func appendLine(out, line []byte, eol string) []byte {
	out = append(out, line...)
	if !bytes.HasSuffix(line, []byte("\n")) {
		out = append(out, eol...)
	}
	return out
}

// remove plans the removal of everything s has in the file.
func (d *document) remove(p *plan, s *server) {
	if s.marker >= 0 {
		p.drop[s.marker] = true
	}
	for _, pt := range s.parts {
		d.dropPart(p, pt)
	}
}

func (d *document) dropPart(p *plan, pt part) {
	for i := pt.first; i <= pt.last; i++ {
		p.drop[i] = true
	}
}

// anchor returns the unit index before which new servers go: right after the last table that
// holds servers (with the key/values of its section), else the end of the file.
func (d *document) anchor() int {
	last := -1
	for i, u := range d.units {
		if u.kind == blankUnit || u.kind == commentUnit || len(u.path) == 0 || u.path[0] != "mcp_servers" {
			continue
		}
		end := u.lastInSect
		if u.kind == keyValueUnit {
			end = d.rootLast
			if u.section >= 0 {
				end = d.units[u.section].lastInSect
			}
		}
		last = max(last, end, i)
	}
	if last < 0 {
		return len(d.units)
	}
	return last + 1
}

// containerError explains why mcpgen cannot add tables to the mcp_servers of this file.
func (d *document) containerError() error {
	u := d.units[d.container]
	line, col := position(d.data, u.at)
	switch {
	case u.kind == arrayTableUnit:
		return fmt.Errorf("%d:%d: mcp_servers is an array of tables, but Codex reads one [mcp_servers.NAME] table per server: rewrite it that way, then re-run", line, col)
	case u.valueKind == unstable.InlineTable:
		return fmt.Errorf("%d:%d: mcp_servers is an inline table, which mcpgen cannot extend without rewriting it: move each server into its own [mcp_servers.NAME] table, then re-run", line, col)
	default:
		return fmt.Errorf("%d:%d: mcp_servers is not a table, but Codex reads one [mcp_servers.NAME] table per server: remove this line or make it such tables, then re-run", line, col)
	}
}

// output builds the merged file. It keeps a record of the lines written, so that blank lines
// stay single around what it removes and inserts.
type output struct {
	buf   []byte
	lines []outLine
	eol   string
}

type outLine struct {
	at    int
	blank bool
}

func (o *output) lastBlank() bool {
	return len(o.lines) == 0 || o.lines[len(o.lines)-1].blank
}

func (o *output) write(b []byte, blank bool) {
	o.lines = append(o.lines, outLine{at: len(o.buf), blank: blank})
	o.buf = append(o.buf, b...)
}

// endLine ends the last line written if it has no line ending (the file's last line had
// none).
func (o *output) endLine() {
	if len(o.buf) > 0 && o.buf[len(o.buf)-1] != '\n' {
		o.buf = append(o.buf, o.eol...)
	}
}

// trimBlank removes the blank lines at the end of what is written.
func (o *output) trimBlank() {
	for len(o.lines) > 0 && o.lines[len(o.lines)-1].blank {
		o.buf = o.buf[:o.lines[len(o.lines)-1].at]
		o.lines = o.lines[:len(o.lines)-1]
	}
}

// apply writes the file with the changes of p.
func (d *document) apply(p *plan) []byte {
	o := &output{buf: make([]byte, 0, len(d.data)+256*len(p.written)), eol: d.eol}
	n := len(d.units)
	inserted := len(p.insert) == 0
	for i := 0; ; {
		if !inserted && i >= p.insertAt {
			d.writeInsert(o, p.insert, i)
			inserted = true
		}
		if i >= n {
			break
		}
		if c, ok := p.replace[i]; ok {
			o.endLine()
			o.write(c.text, false)
			i = c.end
			continue
		}
		if p.drop[i] {
			i = d.skipDropped(o, p, i)
			continue
		}
		u := d.units[i]
		o.write(d.data[u.start:u.end], u.kind == blankUnit)
		i++
	}
	return o.buf
}

// skipDropped skips the dropped units from i, the blank lines between them, and the blank
// lines after them when a blank line (or the start or end of the file) is already there, so
// that removing never leaves two blank lines in a row. It returns the next unit to write.
func (d *document) skipDropped(o *output, p *plan, i int) int {
	n := len(d.units)
	for {
		for i < n && p.drop[i] {
			i++
		}
		j := i
		for j < n && d.units[j].kind == blankUnit {
			j++
		}
		if j < n && p.drop[j] {
			i = j
			continue
		}
		if o.lastBlank() || j == n {
			i = j
		}
		if i == n {
			o.trimBlank()
		}
		return i
	}
}

// writeInsert writes the new servers before unit i, one blank line around each.
func (d *document) writeInsert(o *output, blocks []block, i int) {
	o.endLine()
	for _, b := range blocks {
		if !o.lastBlank() {
			o.write([]byte(o.eol), true)
		}
		o.write(b.text(o.eol), false)
	}
	if i < len(d.units) && d.units[i].kind != blankUnit {
		o.write([]byte(o.eol), true)
	}
}

// verify checks the merged file: it must parse, hold each entry as written (with the
// approval tables of the servers mcpgen owned), not hold the servers removed, and hold
// everything else as before. A failure is a bug in Merge, reported rather than written.
func verify(d *document, p *plan, out []byte) error {
	got := map[string]any{}
	if err := toml.Unmarshal(out, &got); err != nil {
		return fmt.Errorf("internal error: the merged file does not parse (%w); please report this bug", decodeError(err))
	}
	bug := func(key string) error {
		return fmt.Errorf("internal error: the merged file gets %s wrong; please report this bug", key)
	}
	for k, v := range d.decoded {
		if k != "mcp_servers" && !sameValue(v, got[k]) {
			return bug(k)
		}
	}
	for k := range got {
		if _, ok := d.decoded[k]; !ok && k != "mcp_servers" {
			return bug(k)
		}
	}
	oldServers, _ := d.decoded["mcp_servers"].(map[string]any)
	gotServers, _ := got["mcp_servers"].(map[string]any)
	touched := make(map[string]bool, len(p.written)+len(p.removed))
	for _, name := range p.removed {
		touched[name] = true
		if _, ok := gotServers[name]; ok {
			return bug("mcp_servers." + tomlKey(name))
		}
	}
	for _, b := range p.written {
		touched[b.name] = true
		v, ok := gotServers[b.name]
		oldValue, _ := oldServers[b.name].(map[string]any)
		gotValue, _ := v.(map[string]any)
		keepsTools := d.servers[b.name] == nil || d.servers[b.name].state != owned || sameValue(oldValue["tools"], gotValue["tools"])
		if !ok || !sameValue(withoutTools(v), b.value) || !keepsTools {
			return bug("mcp_servers." + tomlKey(b.name))
		}
	}
	for name, v := range oldServers {
		if !touched[name] && !sameValue(v, gotServers[name]) {
			return bug("mcp_servers." + tomlKey(name))
		}
	}
	for name := range gotServers {
		if _, ok := oldServers[name]; !ok && !touched[name] {
			return bug("mcp_servers." + tomlKey(name))
		}
	}
	return nil
}

// sameValue reports whether two decoded values are equal (NaN included).
func sameValue(a, b any) bool {
	return providers.Fingerprint(a) == providers.Fingerprint(b)
}

// syntaxError turns an error of the unstable parser into "line:col: invalid TOML: message".
func syntaxError(data []byte, err error) error {
	var perr *unstable.ParserError
	if !errors.As(err, &perr) {
		return fmt.Errorf("invalid TOML: %w", err)
	}
	at := len(data)
	if perr.Highlight != nil {
		at = cap(data) - cap(perr.Highlight)
		if at < 0 || at > len(data) {
			at = len(data)
		}
	}
	line, col := position(data, at)
	return fmt.Errorf("%d:%d: invalid TOML: %s", line, col, perr.Message)
}

// decodeError turns an error of the TOML decoder into "line:col: invalid TOML: message".
func decodeError(err error) error {
	var derr *toml.DecodeError
	if !errors.As(err, &derr) {
		return fmt.Errorf("invalid TOML: %w", err)
	}
	line, col := derr.Position()
	return fmt.Errorf("%d:%d: invalid TOML: %s", line, col, strings.TrimPrefix(derr.Error(), "toml: "))
}

// position returns the 1-based line and column (in bytes) of offset at.
func position(data []byte, at int) (line, col int) {
	at = min(at, len(data))
	line = 1 + bytes.Count(data[:at], []byte("\n"))
	return line, at - lineStart(data, at) + 1
}

// line returns the line where unit i starts.
func (d *document) line(i int) int {
	line, _ := position(d.data, d.units[i].start)
	return line
}
