package goose

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/providers"
)

// The key of the servers, and of mcpgen's record of what it owns, beside them at the top
// of the file: Goose keeps top-level keys it does not know when it saves the file (it
// drops comments, and the fields it does not know inside an entry):
//
//	_mcpgen:
//	  managed:
//	    NAME:
//	      fingerprint: sha256:0123456789ab
//	      owner: /home/me/app/mcpgen.toml
const (
	ServersKey = "extensions"
	RecordKey  = "_mcpgen"
	managedKey = "managed"
)

// record is what _mcpgen.managed says of one extension.
type record struct {
	fp, owner string
}

// An entry is one extension of the file: its key and value, and its text, from the start
// of its key's line to the end of its last line (with the line break).
type entry struct {
	name       string
	key, value *yaml.Node
	start, end int
}

// document is the file, split into what Merge edits. Offsets are those of data, the file
// without its byte order mark.
type document struct {
	data    []byte
	lines   []int // offset of each line's start
	blank   bool  // no YAML at all: comments and blank lines only
	root    *yaml.Node
	indent  int        // of the root's keys
	ext     *yaml.Node // the key of extensions; nil for none
	extVal  *yaml.Node
	extEnd  int // end of the extensions' text
	entries []entry
	rec     *yaml.Node // the key of _mcpgen; nil for none
	recVal  *yaml.Node
	recSpan [2]int
	managed map[string]record
	broken  bool // the file's last line got the line break it lacked
}

// yamlLineRE reads the line of a yaml.v3 syntax error ("yaml: line 3: did not find ...").
var yamlLineRE = lazyregexp.New(`^yaml: line (\d+): (.*)$`)

// parse reads data, which must be a mapping whose extensions, if any, are a mapping of
// mappings. Errors start with LINE:COL.
func parse(data []byte) (*document, error) {
	d := &document{data: data, managed: map[string]record{}}
	d.lines = append(d.lines, 0)
	for i, c := range data {
		if c == '\n' {
			d.lines = append(d.lines, i+1)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.blank = true
			return d, nil
		}
		return nil, d.syntaxError(err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, d.syntaxError(err)
		}
		return nil, fmt.Errorf("%d:%d: a second YAML document starts here, and Goose reads a file of one: remove it, then re-run", more.Line, more.Column)
	}
	if len(doc.Content) == 0 {
		d.blank = true
		return d, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		d.blank = true // "~" or "null": no settings
		return d, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%d:%d: the file holds %s, but Goose reads a mapping of settings such as %s: fix the file, then re-run", root.Line, root.Column, kindOf(root), ServersKey)
	}
	if root.Style&yaml.FlowStyle != 0 {
		return nil, fmt.Errorf("%d:%d: the file is one {...} mapping: mcpgen edits the block form that Goose writes (one key a line); rewrite it so, then re-run", root.Line, root.Column)
	}
	d.root = root
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if i == 0 {
			d.indent = k.Column - 1
		}
		var at **yaml.Node
		switch k.Value {
		case ServersKey:
			at = &d.ext
		case RecordKey:
			at = &d.rec
		default:
			continue
		}
		if *at != nil {
			return nil, fmt.Errorf("%d:%d: %q appears twice (also at %d:%d), and Goose refuses such a file: merge them into one, then re-run", k.Line, k.Column, k.Value, (*at).Line, (*at).Column)
		}
		*at = k
		if k.Value == ServersKey {
			d.extVal = v
		} else {
			d.recVal = v
		}
	}
	if err := d.readExtensions(); err != nil {
		return nil, err
	}
	return d, d.readRecord()
}

// parserProblems are the errors of yaml.v3's parser, as opposed to its scanner: it names
// their line counting from 0 (the scanner's, from 1).
var parserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>",
	"found undefined tag handle", "did not find expected node content",
	"did not find expected '-' indicator", "did not find expected key",
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found duplicate %YAML directive", "found incompatible YAML document",
	"found duplicate %TAG directive",
}

// syntaxError puts yaml.v3's error in mcpgen's form, LINE:COL first. yaml.v3 names the
// line only (for a parser's error, where the construct that fails starts): the column is
// where that line's text starts.
func (d *document) syntaxError(err error) error {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(parserProblems, m[2]) {
			line++
		}
		return fmt.Errorf("%d:%d: %s: the file is not valid YAML; fix it, then re-run", line, d.textColumn(line), m[2])
	}
	return fmt.Errorf("1:1: %s: the file is not valid YAML; fix it, then re-run", strings.TrimPrefix(msg, "yaml: "))
}

// textColumn is the column of the first character of line that is not blank.
func (d *document) textColumn(line int) int {
	if line < 1 || line > len(d.lines) {
		return 1
	}
	start := d.lines[line-1]
	col := 1
	for i := start; i < len(d.data) && (d.data[i] == ' ' || d.data[i] == '\t'); i++ {
		col++
	}
	return col
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias (*" + n.Value + ")"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!str":
			return "a string"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		}
		return "a scalar"
	}
	return "empty"
}

// readExtensions checks the type of extensions and finds the text of each entry.
func (d *document) readExtensions() error {
	if d.ext == nil {
		return nil
	}
	v := d.extVal
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		d.extEnd = d.regionEnd(d.ext, d.ext.Line)
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("%d:%d: %q is %s, but Goose reads a mapping of extensions: fix or remove it, then re-run", v.Line, v.Column, ServersKey, kindOf(v))
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := v.Content[i]
		if first, ok := seen[k.Value]; ok {
			return fmt.Errorf("%d:%d: extension %q appears twice in %q (also at %d:%d), and Goose refuses such a file: delete one, then re-run", k.Line, k.Column, k.Value, ServersKey, first.Line, first.Column)
		}
		seen[k.Value] = k
		d.entries = append(d.entries, entry{name: k.Value, key: k, value: v.Content[i+1]})
	}
	if v.Style&yaml.FlowStyle != 0 {
		if len(d.entries) > 0 {
			return fmt.Errorf("%d:%d: %q is one {...} mapping: mcpgen edits the block form that Goose writes (one extension under another); rewrite it so, then re-run", v.Line, v.Column, ServersKey)
		}
		d.extEnd = d.regionEnd(d.ext, v.Line)
		return nil
	}
	for i := range d.entries {
		e := &d.entries[i]
		e.start = d.lines[e.key.Line-1]
		if i+1 < len(d.entries) {
			e.end = d.trimEnd(e.key, d.lines[d.entries[i+1].key.Line-1])
		} else {
			e.end = d.regionEnd(e.key, e.key.Line)
		}
	}
	d.extEnd = d.entries[len(d.entries)-1].end
	return nil
}

// regionEnd is the end of the text of key's value: the start of the next key of the root
// after key's line (or the end of the file), without the blank lines and the comments of
// key's indentation or less that end it, which belong to what follows.
func (d *document) regionEnd(key *yaml.Node, from int) int {
	end := len(d.data)
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		if k := d.root.Content[i]; k.Line > from {
			end = d.lines[k.Line-1]
			break
		}
	}
	return d.trimEnd(key, end)
}

// trimEnd moves end back over the blank lines, and the comment lines indented no deeper
// than key, that come right before it; never into key's own line.
func (d *document) trimEnd(key *yaml.Node, end int) int {
	floor := d.lines[key.Line-1]
	if key.Line < len(d.lines) {
		floor = d.lines[key.Line] // past key's line
	}
	if end > len(d.data) {
		end = len(d.data)
	}
	for end > floor {
		start := bytes.LastIndexByte(d.data[:end-1], '\n') + 1
		if start < floor {
			break
		}
		line := d.data[start:end]
		text := bytes.TrimLeft(line, " ")
		indent := len(line) - len(text)
		text = bytes.TrimSpace(text)
		if len(text) != 0 && !(text[0] == '#' && indent <= key.Column-1) {
			break
		}
		end = start
	}
	return end
}

// readRecord checks _mcpgen and reads which extensions mcpgen owns.
func (d *document) readRecord() error {
	if d.rec == nil {
		return nil
	}
	const fix = ": fix or remove it, then re-run"
	v := d.recVal
	d.recSpan = [2]int{d.lines[d.rec.Line-1], d.regionEnd(d.rec, d.rec.Line)}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("%d:%d: %q is %s, but mcpgen keeps a mapping there, {%s: {...}}%s", v.Line, v.Column, RecordKey, kindOf(v), managedKey, fix)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value != managedKey {
			continue
		}
		m := v.Content[i+1]
		if m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
			continue
		}
		if m.Kind != yaml.MappingNode {
			return fmt.Errorf("%d:%d: %s.%s is %s, want a mapping of the extensions mcpgen wrote%s", m.Line, m.Column, RecordKey, managedKey, kindOf(m), fix)
		}
		for j := 0; j+1 < len(m.Content); j += 2 {
			k, r := m.Content[j], m.Content[j+1]
			if _, dup := d.managed[k.Value]; dup {
				return fmt.Errorf("%d:%d: %s.%s lists %q twice: delete one, then re-run", k.Line, k.Column, RecordKey, managedKey, k.Value)
			}
			var rec struct {
				Fingerprint *string `yaml:"fingerprint"`
				Owner       string  `yaml:"owner"`
			}
			if r.Kind != yaml.MappingNode || r.Decode(&rec) != nil || rec.Fingerprint == nil {
				return fmt.Errorf("%d:%d: %s.%s.%s is not the record mcpgen wrote, {fingerprint: sha256:..., owner: ...}%s", r.Line, r.Column, RecordKey, managedKey, k.Value, fix)
			}
			d.managed[k.Value] = record{fp: *rec.Fingerprint, owner: rec.Owner}
		}
	}
	return nil
}

// fingerprint is the fingerprint of a YAML value's content: its decoded value, keys
// sorted, whatever its layout, quoting and comments.
func fingerprint(n *yaml.Node) string {
	v, ok := generic(n)
	if !ok {
		return "" // matches no record: the entry reads as edited
	}
	return providers.Fingerprint(v)
}

// generic is n as yaml.v3 decodes it into an any: strings, mappings and lists walked
// here, which costs a fraction of yaml.v3's reflection; other scalars, aliases and merge
// keys left to yaml.v3.
func generic(n *yaml.Node) (any, bool) {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		return n.Value, true
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, true
	case n.Kind == yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, ok := generic(c)
			if !ok {
				return nil, false
			}
			l[i] = v
		}
		return l, true
	case n.Kind == yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || k.Value == "<<" {
				return decoded(n)
			}
			v, ok := generic(n.Content[i+1])
			if !ok {
				return nil, false
			}
			m[k.Value] = v
		}
		return m, true
	}
	return decoded(n)
}

func decoded(n *yaml.Node) (any, bool) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// A value is an entry made ready to write.
type value struct {
	name string
	text []byte // the mapping, at column 0
	fp   string
}

func prepare(entries []providers.Rendered) ([]value, error) {
	values := make([]value, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := providers.CheckEntryName(e.Name, seen); err != nil {
			return nil, err
		}
		fp := e.Fingerprint
		if fp == "" {
			var n yaml.Node
			if err := yaml.Unmarshal(e.Value, &n); err != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
				return nil, fmt.Errorf("entry %q: value is not a YAML mapping", e.Name)
			}
			fp = fingerprint(n.Content[0])
		}
		text := e.Value
		if !bytes.HasSuffix(text, []byte("\n")) {
			text = append(slices.Clip(text), '\n')
		}
		values = append(values, value{name: e.Name, text: text, fp: fp})
	}
	return values, nil
}

func (d *document) state(e entry, own providers.Ownership) (providers.EntryState, string) {
	rec, ok := d.managed[e.name]
	switch {
	case !ok:
		return providers.EntryHandWritten, ""
	case !own.Mine(rec.owner) && !own.Legacy(rec.owner):
		return providers.EntryForeign, ""
	}
	if fp := fingerprint(e.value); fp == rec.fp {
		return providers.EntryOwned, fp
	}
	return providers.EntryEdited, ""
}

// Merge returns existing with the extensions of entries written into its extensions
// mapping and recorded as mcpgen's own under _mcpgen, and the extensions that mcpgen owns
// but entries no longer lists removed. entries is the full set, in order.
//
// It edits the file in place: every byte outside the entries it writes, replaces or
// removes, and outside _mcpgen, stays as it was (comments, blank lines, other settings and
// extensions, key order, quoting, CRLF line endings, a byte order mark). An extension
// already in the file keeps its place; new ones go after the last. An entry of the
// manifest's that Goose saved again (its own layout, same content) is kept as it is.
//
// An extension that entries names but someone wrote or edited by hand, or another manifest
// owns, and an edited one that would be removed, are conflicts: Merge returns a
// *providers.ConflictError listing them all, unless opts.Force. Errors carry line:column,
// and never come with output. When nothing changes, Merge returns a copy of existing.
func Merge(existing []byte, entries []providers.Rendered, opts providers.MergeOptions) ([]byte, error) {
	values, err := prepare(entries)
	if err != nil {
		return nil, err
	}
	bom := bytes.HasPrefix(existing, providers.UTF8BOM)
	d, err := parse(bytes.TrimPrefix(existing, providers.UTF8BOM))
	if err != nil {
		return nil, err
	}
	own := providers.Ownership{Owner: opts.Owner, Aliases: opts.Aliases}
	out, changed, err := d.merge(values, own, opts)
	switch {
	case err != nil:
		return nil, err
	case !changed:
		return bytes.Clone(existing), nil
	}
	if bom {
		out = append(bytes.Clone(providers.UTF8BOM), out...)
	}
	return out, nil
}

// A textEdit replaces data[start:end] with text.
type textEdit struct {
	start, end int
	text       []byte
}

func (d *document) merge(values []value, own providers.Ownership, opts providers.MergeOptions) ([]byte, bool, error) {
	if len(values) == 0 && !d.anyMine(own) {
		return nil, false, nil
	}
	wanted := make(map[string]*value, len(values))
	for i := range values {
		wanted[values[i].name] = &values[i]
	}
	var edits []textEdit
	removed := 0
	var conflicts []providers.Conflict
	records := map[string]record{} // the record after the merge
	placed := map[string]bool{}
	entryIndent := d.indent + 2
	if len(d.entries) > 0 && d.extVal.Style&yaml.FlowStyle == 0 {
		entryIndent = d.entries[0].key.Column - 1
	}
	for _, e := range d.entries {
		v := wanted[e.name]
		st, fp := d.state(e, own)
		rec, recorded := d.managed[e.name]
		legacy := recorded && own.Legacy(rec.owner)
		switch providers.Decide(st, v != nil, v != nil && v.fp == fp, legacy, opts.Force) {
		case providers.KeepOurs:
			records[e.name] = record{fp: v.fp, owner: own.Owner} // as it is, Goose's layout or ours
			placed[v.name] = true
		case providers.Replace:
			edits = append(edits, textEdit{e.start, e.end, d.entryText(v, e.key.Column-1)})
			records[e.name] = record{fp: v.fp, owner: own.Owner}
			placed[v.name] = true
		case providers.Clash:
			conflicts = append(conflicts, st.Conflict(e.name, e.key.Line, rec.owner))
		case providers.KeepRecord:
			records[e.name] = rec // another manifest's, or without owner: it goes only when this manifest replaces it
		case providers.Remove:
			edits = append(edits, textEdit{e.start, e.end, nil})
			removed++
		}
	}
	if len(conflicts) > 0 {
		return nil, false, &providers.ConflictError{Conflicts: conflicts}
	}
	var added []byte
	var order []string // of the records: the file's, then the new ones
	for _, e := range d.entries {
		if _, ok := records[e.name]; ok {
			order = append(order, e.name)
		}
	}
	for i := range values {
		if !placed[values[i].name] {
			order = append(order, values[i].name)
			added = append(added, d.entryText(&values[i], entryIndent)...)
			records[values[i].name] = record{fp: values[i].fp, owner: own.Owner}
		}
	}
	switch {
	case len(added) == 0 && removed > 0 && removed == len(d.entries):
		// No extension left: {} rather than null, which Goose reads as no mapping at all.
		at := d.lines[d.ext.Line-1]
		end := len(d.data)
		if d.ext.Line < len(d.lines) {
			end = d.lines[d.ext.Line]
		}
		edits = append(edits, textEdit{at, end, []byte(strings.Repeat(" ", d.indent) + ServersKey + ": {}\n")})
	case len(added) == 0:
	case d.ext == nil:
		edits = append(edits, textEdit{d.appendAt(), d.appendAt(), d.joined(append([]byte(strings.Repeat(" ", d.indent)+ServersKey+":\n"), added...))})
	case len(d.entries) == 0:
		// null or {}: the key's region becomes a block of entries.
		start := d.lines[d.ext.Line-1]
		edits = append(edits, textEdit{start, d.extEnd, append([]byte(strings.Repeat(" ", d.indent)+ServersKey+":\n"), added...)})
	default:
		edits = append(edits, textEdit{d.extEnd, d.extEnd, added})
	}
	if e, ok := d.recordEdit(records, order); ok {
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return nil, false, nil
	}
	out := d.apply(edits)
	return out, !bytes.Equal(out, d.data), nil
}

// anyMine reports whether the file records an extension as the manifest's own.
func (d *document) anyMine(own providers.Ownership) bool {
	for _, rec := range d.managed {
		if own.Mine(rec.owner) {
			return true
		}
	}
	return false
}

// entryText writes v as an entry of extensions whose keys are indented by indent.
func (d *document) entryText(v *value, indent int) []byte {
	var b []byte
	b = append(b, strings.Repeat(" ", indent)...)
	b = appendScalar(b, v.name)
	b = append(b, ":\n"...)
	b = append(b, indentText(v.text, indent+2)...)
	return b
}

// indentText indents every line of text but the blank ones, which would gain trailing
// spaces (and mean the same in YAML without them).
func indentText(text []byte, n int) []byte {
	pad := strings.Repeat(" ", n)
	var b []byte
	for line := range bytes.Lines(text) {
		if len(bytes.TrimSpace(line)) > 0 {
			b = append(b, pad...)
		}
		b = append(b, line...)
	}
	return b
}

// appendAt is where text appended to the file goes: its end, after a line break.
func (d *document) appendAt() int { return len(d.data) }

// joined prefixes text with the line break that the file's last line lacks, if any: the
// first text appended only.
func (d *document) joined(text []byte) []byte {
	if len(d.data) > 0 && d.data[len(d.data)-1] != '\n' && !d.broken {
		d.broken = true
		return append([]byte("\n"), text...)
	}
	return text
}

// recordEdit writes _mcpgen with records, in the order of the extensions, when it changes:
// its other fields stay.
func (d *document) recordEdit(records map[string]record, names []string) (textEdit, bool) {
	managed := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range names {
		r := records[name]
		var m mapping
		m.add("fingerprint", str(r.fp))
		if r.owner != "" {
			m.add("owner", str(r.owner))
		}
		addPair(managed, name, &m.n)
	}
	var body mapping
	body.n.Kind = yaml.MappingNode
	if d.recVal != nil && d.recVal.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(d.recVal.Content); i += 2 {
			if d.recVal.Content[i].Value != managedKey {
				body.n.Content = append(body.n.Content, d.recVal.Content[i], d.recVal.Content[i+1])
			}
		}
	}
	if len(names) > 0 {
		body.add(managedKey, managed)
	}
	same := d.rec != nil && len(records) == len(d.managed)
	for name, r := range records {
		same = same && d.managed[name] == r
	}
	switch {
	case same:
		return textEdit{}, false
	case len(body.n.Content) == 0 && d.rec == nil:
		return textEdit{}, false
	case len(body.n.Content) == 0:
		return textEdit{d.recSpan[0], d.recSpan[1], nil}, true
	}
	text := []byte(strings.Repeat(" ", d.indent) + RecordKey + ":\n")
	text = append(text, indentText(body.bytes(), d.indent+2)...)
	if d.rec != nil {
		return textEdit{d.recSpan[0], d.recSpan[1], text}, true
	}
	return textEdit{d.appendAt(), d.appendAt(), d.joined(text)}, true
}

// apply makes the edits, in order of their start; those at one offset in the order given.
func (d *document) apply(edits []textEdit) []byte {
	slices.SortStableFunc(edits, func(a, b textEdit) int { return a.start - b.start })
	crlf := d.crlf()
	var out []byte
	at := 0
	for _, e := range edits {
		out = append(out, d.data[at:e.start]...)
		text := e.text
		if crlf {
			text = bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
		}
		out = append(out, text...)
		at = e.end
	}
	return append(out, d.data[at:]...)
}

// crlf reports whether the file's first line ends with CRLF.
func (d *document) crlf() bool {
	i := bytes.IndexByte(d.data, '\n')
	return i > 0 && d.data[i-1] == '\r'
}

// Owners returns the extensions of a config that _mcpgen records, in the order of the
// extensions mapping, each with the manifest its record names ("" when it names none).
func Owners(data []byte) ([]providers.Owned, error) {
	d, err := parse(bytes.TrimPrefix(data, providers.UTF8BOM))
	if err != nil {
		return nil, err
	}
	var owned []providers.Owned
	for _, e := range d.entries {
		if rec, ok := d.managed[e.name]; ok {
			owned = append(owned, providers.Owned{Name: e.name, Owner: rec.owner})
		}
	}
	return owned, nil
}
