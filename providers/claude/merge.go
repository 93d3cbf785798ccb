package claude

import (
	"bytes"
	"errors"
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/providers"
)

// Entry is one server that mcpgen owns.
type Entry struct {
	Name string
	// Value is the server's JSON object, compact or not.
	Value []byte
}

// MergeOptions changes how Merge treats servers that mcpgen does not own.
type MergeOptions struct {
	// Force replaces or removes servers written or edited by hand instead of reporting them
	// as conflicts.
	Force bool
}

// The top-level keys that Merge reads and writes. Claude ignores top-level keys it does not
// know, so the record of what mcpgen owns lives beside the servers:
// "_mcpgen": {"managed": {"NAME": "sha256:..."}}.
const (
	serversKey = "mcpServers"
	recordKey  = "_mcpgen"
	managedKey = "managed"
)

// Merge returns existing with the servers of entries written into its mcpServers object and
// recorded as mcpgen's own under _mcpgen, and the servers that mcpgen owns but entries no
// longer lists removed. entries is the full set, in order.
//
// A server already in the file keeps its place; new servers go at the end of mcpServers.
// Every other key and server keeps its place and its content (numbers as written, no HTML
// escaping), re-indented with two spaces. When nothing changes, Merge returns a copy of
// existing, whatever its layout. Empty input is read as {}, and gives the fresh rendering of
// entries.
//
// A server that entries names but someone wrote or edited by hand, and an edited server that
// would be removed, are conflicts: Merge returns a *providers.ConflictError listing them all,
// unless opts.Force. Errors carry line:column, and never come with output.
//
// A UTF-8 byte order mark at the start of existing is read past, and left out of a file that
// changes: RFC 8259 forbids it in JSON that is exchanged and lets readers refuse it (Python's
// json does), while every reader takes the file without it. The file is re-indented anyway,
// so no byte-for-byte promise is lost.
func Merge(existing []byte, entries []Entry, opts MergeOptions) ([]byte, error) {
	values, err := prepareValues(entries)
	if err != nil {
		return nil, err
	}
	doc, err := parse(bytes.TrimPrefix(existing, providers.UTF8BOM))
	if err != nil {
		return nil, err
	}
	servers, changes, err := doc.merge(values, opts.Force)
	if err != nil {
		return nil, err
	}
	if !changes && !doc.blank {
		return bytes.Clone(existing), nil
	}
	out, err := doc.render(servers, len(values) > 0)
	if err != nil {
		return nil, err
	}
	if !doc.blank && doc.sameAs(out) {
		return bytes.Clone(existing), nil
	}
	return out, nil
}

// entryValue is an entry made ready to write.
type entryValue struct {
	name string
	raw  []byte
	fp   string
}

// prepareValues checks the entries and fingerprints them.
func prepareValues(entries []Entry) ([]entryValue, error) {
	values := make([]entryValue, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := providers.CheckEntryName(e.Name, seen); err != nil {
			return nil, err
		}
		raw := trimSpace(e.Value)
		if err := validate(raw); err != nil {
			return nil, fmt.Errorf("entry %q: value %w", e.Name, err)
		}
		if kind := kindOf(raw); kind != "an object" {
			return nil, fmt.Errorf("entry %q: value is %s, want a JSON object", e.Name, kind)
		}
		values = append(values, entryValue{name: e.Name, raw: raw, fp: fingerprint(raw)})
	}
	return values, nil
}

// member is one member of a JSON object, as written.
type member struct {
	key    string // decoded
	rawKey []byte
	value  []byte
	at     int // offset of the key in the document
	valAt  int // offset of the value
}

// document is the existing file, split into the members that Merge needs.
type document struct {
	data    []byte
	blank   bool
	members []member // top level
	servers int      // index of mcpServers in members, -1 if none
	dupKey  string   // a top-level key that Merge reads, written twice: an error once it matters
	dupAt   [2]int   // offsets of the two keys named dupKey
	entries []member // of mcpServers
	record  int      // index of _mcpgen in members, -1 if none
	fields  []member // of _mcpgen
	managed map[string]string
}

// parse checks existing and splits it. Blank input stands for {}.
func parse(data []byte) (*document, error) {
	d := &document{data: data, servers: -1, record: -1, managed: map[string]string{}}
	trimmed := trimSpace(data)
	if len(trimmed) == 0 {
		d.blank = true
		return d, nil
	}
	if err := validate(data); err != nil {
		return nil, err
	}
	start := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	if kind := kindOf(data[start:]); kind != "an object" {
		line, col := position(data, start)
		return nil, fmt.Errorf("%d:%d: the file holds %s, but Claude reads an object such as {%q: {}}: fix the file, then re-run", line, col, kind, serversKey)
	}
	d.members = members(data, start)
	for i, m := range d.members {
		if m.key == serversKey || m.key == recordKey {
			d.noteKey(i)
		}
	}
	if err := d.readServers(); err != nil {
		return nil, err
	}
	if err := d.readRecord(); err != nil {
		return nil, err
	}
	return d, nil
}

// noteKey remembers where mcpServers or _mcpgen is, and whether it appears twice.
func (d *document) noteKey(i int) {
	m := d.members[i]
	at := &d.servers
	if m.key == recordKey {
		at = &d.record
	}
	if *at >= 0 && d.dupKey == "" {
		d.dupKey, d.dupAt = m.key, [2]int{d.members[*at].at, m.at}
	}
	*at = i
}

// readServers checks the type of mcpServers and splits it.
func (d *document) readServers() error {
	if d.servers < 0 {
		return nil
	}
	m := d.members[d.servers]
	if kind := kindOf(m.value); kind != "an object" {
		return d.typeError(m, fmt.Sprintf("%q is %s, but Claude reads an object of servers: fix or remove it, then re-run", serversKey, kind))
	}
	d.entries = members(d.data, m.valAt)
	return nil
}

// readRecord checks _mcpgen and reads which servers mcpgen owns.
func (d *document) readRecord() error {
	if d.record < 0 {
		return nil
	}
	m := d.members[d.record]
	const fix = ": fix or remove it, then re-run"
	if kind := kindOf(m.value); kind != "an object" {
		return d.typeError(m, fmt.Sprintf("%q is %s, but mcpgen keeps an object there, {%q: {...}}%s", recordKey, kind, managedKey, fix))
	}
	d.fields = members(d.data, m.valAt)
	for _, f := range d.fields {
		if f.key != managedKey {
			continue
		}
		if kind := kindOf(f.value); kind != "an object" {
			return d.typeError(f, fmt.Sprintf("%q.%q is %s, want an object of fingerprints%s", recordKey, managedKey, kind, fix))
		}
		d.managed = map[string]string{}
		for _, r := range members(d.data, f.valAt) {
			if _, ok := d.managed[r.key]; ok {
				return d.typeError(r, fmt.Sprintf("%q.%q lists %q twice: delete one, then re-run", recordKey, managedKey, r.key))
			}
			var fp string
			if kindOf(r.value) != "a string" || json.Unmarshal(r.value, &fp) != nil {
				return d.typeError(r, fmt.Sprintf("%q.%q.%q is %s, want the fingerprint string mcpgen wrote%s", recordKey, managedKey, r.key, kindOf(r.value), fix))
			}
			d.managed[r.key] = fp
		}
	}
	return nil
}

func (d *document) typeError(m member, msg string) error {
	line, col := position(d.data, m.at)
	return fmt.Errorf("%d:%d: %s", line, col, msg)
}

// out is a member of the merged mcpServers.
type out struct {
	rawKey []byte
	value  []byte
	name   string
	fp     string // of a server mcpgen owns, else ""
}

// merge returns the merged servers in order, and whether there may be changes at all (there
// are none without entries and without servers that mcpgen owns), or the conflicts.
func (d *document) merge(values []entryValue, force bool) ([]out, bool, error) {
	if len(values) == 0 && len(d.managed) == 0 {
		return nil, false, nil
	}
	if d.dupKey != "" {
		l1, c1 := position(d.data, d.dupAt[0])
		l2, c2 := position(d.data, d.dupAt[1])
		return nil, false, fmt.Errorf("%d:%d: %q appears twice (also at %d:%d), and Claude reads only the last: merge them into one, then re-run", l2, c2, d.dupKey, l1, c1)
	}
	wanted := make(map[string]*entryValue, len(values))
	for i := range values {
		wanted[values[i].name] = &values[i]
	}
	if err := d.duplicateServer(wanted); err != nil {
		return nil, false, err
	}
	var servers []out
	var conflicts []providers.Conflict
	placed := make(map[string]bool, len(values))
	for _, m := range d.entries {
		st := d.state(m)
		v := wanted[m.key]
		switch {
		case v != nil && (st == owned || force):
			servers = append(servers, out{rawKey: m.rawKey, value: v.raw, name: v.name, fp: v.fp})
			placed[v.name] = true
		case v != nil:
			conflicts = append(conflicts, d.conflict(m, st))
		case st == owned || st == edited && force:
			// removed
		case st == edited:
			conflicts = append(conflicts, d.conflict(m, st))
		default:
			servers = append(servers, out{rawKey: m.rawKey, value: m.value, name: m.key})
		}
	}
	if len(conflicts) > 0 {
		return nil, false, &providers.ConflictError{Conflicts: conflicts}
	}
	for _, v := range values {
		if !placed[v.name] {
			servers = append(servers, out{rawKey: str(v.name), value: v.raw, name: v.name, fp: v.fp})
		}
	}
	return servers, true, nil
}

// duplicateServer reports a server written twice in mcpServers, when Merge has to change it.
func (d *document) duplicateServer(wanted map[string]*entryValue) error {
	first := make(map[string]int, len(d.entries))
	for _, m := range d.entries {
		at, seen := first[m.key]
		if !seen {
			first[m.key] = m.at
			continue
		}
		if _, recorded := d.managed[m.key]; wanted[m.key] != nil || recorded {
			l1, c1 := position(d.data, at)
			l2, c2 := position(d.data, m.at)
			return fmt.Errorf("%d:%d: server %q appears twice in %q (also at %d:%d), and Claude reads only the last: delete one, then re-run", l2, c2, m.key, serversKey, l1, c1)
		}
	}
	return nil
}

// state is how the file's copy of a server relates to mcpgen.
type state uint8

const (
	handWritten state = iota // not recorded
	owned                    // recorded, and unchanged since mcpgen wrote it
	edited                   // recorded, changed since
)

func (d *document) state(m member) state {
	fp, ok := d.managed[m.key]
	switch {
	case !ok:
		return handWritten
	case fp == fingerprint(m.value):
		return owned
	default:
		return edited
	}
}

func (d *document) conflict(m member, st state) providers.Conflict {
	line, _ := position(d.data, m.at)
	reason := providers.ReasonHandWritten
	if st == edited {
		reason = providers.ReasonEdited
	}
	return providers.Conflict{Name: m.key, Reason: reason, Line: line}
}

// render writes the merged document, indented, in the file's line ending: every top-level
// member in its place, mcpServers replaced by servers (added at the end when new), _mcpgen
// updated (added right after mcpServers when new, removed when it holds nothing).
func (d *document) render(servers []out, anyOurs bool) ([]byte, error) {
	compact := d.compose(servers, anyOurs)
	var buf bytes.Buffer
	buf.Grow(len(compact) + len(compact)/2)
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		return nil, fmt.Errorf("internal error: the merged file is not valid JSON (%v); please report this bug", err)
	}
	buf.WriteByte('\n')
	if d.crlf() {
		// JSON strings hold no raw line breaks: every '\n' is a line ending.
		return bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte("\r\n")), nil
	}
	return buf.Bytes(), nil
}

// crlf reports whether the file's first line ends with CRLF.
func (d *document) crlf() bool {
	i := bytes.IndexByte(d.data, '\n')
	return i > 0 && d.data[i-1] == '\r'
}

// compose writes the merged document, keeping the layout of the values it copies.
func (d *document) compose(servers []out, anyOurs bool) []byte {
	var serversObj objectBuilder
	for _, s := range servers {
		serversObj.add(s.rawKey, s.value)
	}
	record, recordNew := d.recordObject(servers, anyOurs)
	var top objectBuilder
	addServers := func(rawKey []byte) {
		top.add(rawKey, serversObj.bytes())
		if recordNew && record != nil {
			top.add(str(recordKey), record)
		}
	}
	for i, m := range d.members {
		switch i {
		case d.servers:
			addServers(m.rawKey)
		case d.record:
			if record != nil {
				top.add(m.rawKey, record)
			}
		default:
			top.add(m.rawKey, m.value)
		}
	}
	if d.servers < 0 {
		addServers(str(serversKey))
	}
	return top.bytes()
}

// recordObject writes the _mcpgen object: its other fields as they were, and managed with
// the fingerprint of each server mcpgen now owns, in the order of mcpServers. It returns nil
// when the object would be empty, and whether _mcpgen is new to the file.
func (d *document) recordObject(servers []out, anyOurs bool) ([]byte, bool) {
	var managed []byte
	if anyOurs {
		var m objectBuilder
		for _, s := range servers {
			if s.fp != "" {
				m.add(str(s.name), str(s.fp))
			}
		}
		managed = m.bytes()
	}
	var record objectBuilder
	for _, f := range d.fields {
		switch {
		case f.key != managedKey:
			record.add(f.rawKey, f.value)
		case managed != nil:
			record.add(f.rawKey, managed)
			managed = nil // a second "managed" goes
		}
	}
	if managed != nil {
		record.add(str(managedKey), managed)
	}
	if record.empty() {
		return nil, d.record < 0
	}
	return record.bytes(), d.record < 0
}

// objectBuilder writes a JSON object member by member, keys and values as given.
type objectBuilder struct {
	b []byte
}

func (o *objectBuilder) add(rawKey, value []byte) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, rawKey...)
	o.b = append(o.b, ':')
	o.b = append(o.b, value...)
}

func (o *objectBuilder) empty() bool {
	return len(o.b) == 0
}

func (o *objectBuilder) bytes() []byte {
	if o.empty() {
		return []byte("{}")
	}
	return append(o.b, '}')
}

// sameAs reports whether out holds the same JSON as the existing document, whitespace
// aside: then Merge has nothing to change.
func (d *document) sameAs(out []byte) bool {
	var a, b bytes.Buffer
	if json.Compact(&a, d.data) != nil || json.Compact(&b, out) != nil {
		return false
	}
	return bytes.Equal(a.Bytes(), b.Bytes())
}

// fingerprint returns the fingerprint of a JSON value, numbers as written.
func fingerprint(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "" // unreachable: raw was validated
	}
	return providers.Fingerprint(v)
}

// validate returns "line:col: invalid JSON: ..." when data is not one valid JSON value.
func validate(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	var serr *json.SyntaxError
	if !errors.As(err, &serr) {
		if err == nil {
			err = errors.New("not valid")
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	at := int(serr.Offset)
	if at > 0 && at <= len(data) && !bytes.Contains([]byte(serr.Error()), []byte("end of JSON input")) {
		at-- // the offset is just past the offending byte
	}
	line, col := position(data, at)
	return fmt.Errorf("%d:%d: invalid JSON: %s", line, col, serr.Error())
}

// kindOf names the kind of the JSON value that b starts with.
func kindOf(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// members returns the members of the object that starts at data[at], which must be valid
// JSON, in order, duplicates included.
func members(data []byte, at int) []member {
	var ms []member
	i := skipSpace(data, at+1)
	if i >= len(data) || data[i] == '}' {
		return nil
	}
	for i < len(data) {
		keyStart := i
		i = skipString(data, i)
		rawKey := data[keyStart:i]
		i = skipSpace(data, i)
		i = skipSpace(data, i+1) // ':'
		valueStart := i
		i = skipValue(data, i)
		ms = append(ms, member{key: decodeKey(rawKey), rawKey: rawKey, value: data[valueStart:i], at: keyStart, valAt: valueStart})
		i = skipSpace(data, i)
		if i >= len(data) || data[i] == '}' {
			break
		}
		i = skipSpace(data, i+1) // ','
	}
	return ms
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the offset just past the string that starts at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// skipValue returns the offset just past the value that starts at data[i].
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(data) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(data[i])) {
			i++
		}
		return i
	}
}

// decodeKey returns the text of a JSON string.
func decodeKey(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && len(raw) >= 2 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw)
	}
	return s
}

// trimSpace drops JSON whitespace around b.
func trimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// position returns the 1-based line and column (in bytes) of offset at.
func position(data []byte, at int) (line, col int) {
	at = min(at, len(data))
	line = 1 + bytes.Count(data[:at], []byte("\n"))
	return line, at - (bytes.LastIndexByte(data[:at], '\n') + 1) + 1
}
