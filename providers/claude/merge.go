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
	// Force replaces or removes servers written or edited by hand, and overwrites those of
	// another manifest, instead of reporting them as conflicts.
	Force bool
	// Owner is the id of the manifest whose entries these are (manifest.OwnerID): the record
	// of each entry names it, and Merge replaces and removes only the entries it names (see
	// providers.Ownership). Empty: records name no owner, and the entries recorded without
	// one are the caller's.
	Owner string
	// Aliases are other ids of the same manifest: their entries are its own too, and are
	// recorded anew with Owner.
	Aliases []string
}

// The top-level keys that Merge reads and writes. Claude ignores top-level keys it does not
// know, so the record of what mcpgen owns lives beside the servers:
//
//	"_mcpgen": {"managed": {"NAME": {"fingerprint": "sha256:...", "owner": "/home/me/app/mcpgen.toml"}}}
//
// An mcpgen before owners wrote "NAME": "sha256:...", which Merge still reads (an entry
// without owner); such an mcpgen refuses the object form with an error that names its line,
// rather than taking another manifest's entries for its own.
const (
	serversKey     = "mcpServers"
	recordKey      = "_mcpgen"
	managedKey     = "managed"
	fingerprintKey = "fingerprint"
	ownerKey       = "owner"
)

// record is what _mcpgen.managed says of one server.
type record struct {
	fp    string
	owner string
	raw   []byte // as written, to keep the records of other manifests' servers as they are
}

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
	values, err := prepareValues(entries, opts.Owner)
	if err != nil {
		return nil, err
	}
	doc, err := parse(bytes.TrimPrefix(existing, providers.UTF8BOM))
	if err != nil {
		return nil, err
	}
	servers, changes, err := doc.merge(values, providers.Ownership{Owner: opts.Owner, Aliases: opts.Aliases}, opts.Force)
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
	name   string
	raw    []byte
	record []byte // its record in _mcpgen.managed
}

// prepareValues checks the entries, fingerprints them and writes their records.
func prepareValues(entries []Entry, owner string) ([]entryValue, error) {
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
		values = append(values, entryValue{name: e.Name, raw: raw, record: recordOf(fingerprint(raw), owner)})
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
	managed map[string]record
}

// parse checks existing and splits it. Blank input stands for {}.
func parse(data []byte) (*document, error) {
	d := &document{data: data, servers: -1, record: -1, managed: map[string]record{}}
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
		d.managed = map[string]record{}
		for _, r := range members(d.data, f.valAt) {
			if _, ok := d.managed[r.key]; ok {
				return d.typeError(r, fmt.Sprintf("%q.%q lists %q twice: delete one, then re-run", recordKey, managedKey, r.key))
			}
			rec, ok := readEntryRecord(r.value)
			if !ok {
				return d.typeError(r, fmt.Sprintf("%q.%q.%q is %s, want the record mcpgen wrote, {%q: \"sha256:...\", %q: \"...\"}%s", recordKey, managedKey, r.key, kindOf(r.value), fingerprintKey, ownerKey, fix))
			}
			d.managed[r.key] = rec
		}
	}
	return nil
}

// readEntryRecord reads one server's record: {"fingerprint": ..., "owner": ...}, or the
// fingerprint alone, as an mcpgen before owners wrote it.
func readEntryRecord(raw []byte) (record, bool) {
	rec := record{raw: raw}
	switch kindOf(raw) {
	case "a string":
		return rec, json.Unmarshal(raw, &rec.fp) == nil
	case "an object":
		var v struct {
			Fingerprint *string `json:"fingerprint"`
			Owner       string  `json:"owner"`
		}
		if json.Unmarshal(raw, &v) != nil || v.Fingerprint == nil {
			return rec, false
		}
		rec.fp, rec.owner = *v.Fingerprint, v.Owner
		return rec, true
	}
	return rec, false
}

// recordOf writes the record of a server that mcpgen writes for owner: the fingerprint
// alone when there is no owner, as mcpgen always wrote it.
func recordOf(fp, owner string) []byte {
	if owner == "" {
		return str(fp)
	}
	var o objectBuilder
	o.add(str(fingerprintKey), str(fp))
	o.add(str(ownerKey), str(owner))
	return o.bytes()
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
	record []byte // its record in _mcpgen.managed; nil for a server mcpgen did not write
}

// merge returns the merged servers in order, and whether there may be changes at all (there
// are none without entries and without servers of this manifest), or the conflicts.
func (d *document) merge(values []entryValue, own providers.Ownership, force bool) ([]out, bool, error) {
	if len(values) == 0 && !d.anyMine(own) {
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
		st := d.state(m, own)
		rec, recorded := d.managed[m.key]
		legacy := recorded && own.Legacy(rec.owner)
		v := wanted[m.key]
		switch {
		case v != nil && (st == owned || force):
			servers = append(servers, out{rawKey: m.rawKey, value: v.raw, name: v.name, record: v.record})
			placed[v.name] = true
		case v != nil:
			conflicts = append(conflicts, d.conflict(m, st))
		case legacy && st != handWritten:
			// An entry without owner goes only when this manifest replaces it.
			servers = append(servers, out{rawKey: m.rawKey, value: m.value, name: m.key, record: rec.raw})
		case st == owned || st == edited && force:
			// removed
		case st == edited:
			conflicts = append(conflicts, d.conflict(m, st))
		case st == foreign:
			servers = append(servers, out{rawKey: m.rawKey, value: m.value, name: m.key, record: rec.raw})
		default:
			servers = append(servers, out{rawKey: m.rawKey, value: m.value, name: m.key})
		}
	}
	if len(conflicts) > 0 {
		return nil, false, &providers.ConflictError{Conflicts: conflicts}
	}
	for _, v := range values {
		if !placed[v.name] {
			servers = append(servers, out{rawKey: str(v.name), value: v.raw, name: v.name, record: v.record})
		}
	}
	return servers, true, nil
}

// anyMine reports whether the file records a server as the manifest's own.
func (d *document) anyMine(own providers.Ownership) bool {
	for _, rec := range d.managed {
		if own.Mine(rec.owner) {
			return true
		}
	}
	return false
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

// state is how the file's copy of a server relates to the manifest that merges.
type state uint8

const (
	handWritten state = iota // not recorded
	owned                    // recorded as the manifest's (or without owner), unchanged since
	edited                   // recorded as the manifest's (or without owner), changed since
	foreign                  // recorded as another manifest's
)

func (d *document) state(m member, own providers.Ownership) state {
	rec, ok := d.managed[m.key]
	switch {
	case !ok:
		return handWritten
	case !own.Mine(rec.owner) && !own.Legacy(rec.owner):
		return foreign
	case rec.fp == fingerprint(m.value):
		return owned
	default:
		return edited
	}
}

func (d *document) conflict(m member, st state) providers.Conflict {
	line, _ := position(d.data, m.at)
	c := providers.Conflict{Name: m.key, Reason: providers.ReasonHandWritten, Line: line}
	switch st {
	case edited:
		c.Reason = providers.ReasonEdited
	case foreign:
		c.Reason, c.Owner = providers.ReasonOtherManifest, d.managed[m.key].owner
	}
	return c
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
// the record of each server mcpgen wrote (for this manifest, or kept as another's), in the
// order of mcpServers. It returns nil when the object would be empty, and whether _mcpgen is
// new to the file.
func (d *document) recordObject(servers []out, anyOurs bool) ([]byte, bool) {
	var managed []byte
	var m objectBuilder
	for _, s := range servers {
		if s.record != nil {
			m.add(str(s.name), s.record)
		}
	}
	if anyOurs || !m.empty() {
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

// Owners returns the servers of a Claude config that _mcpgen records, in the order of
// mcpServers, each with the manifest its record names ("" when it names none).
func Owners(data []byte) ([]providers.Owned, error) {
	doc, err := parse(bytes.TrimPrefix(data, providers.UTF8BOM))
	if err != nil {
		return nil, err
	}
	var owned []providers.Owned
	seen := map[string]bool{}
	for _, m := range doc.entries {
		if rec, ok := doc.managed[m.key]; ok && !seen[m.key] {
			seen[m.key] = true
			owned = append(owned, providers.Owned{Name: m.key, Owner: rec.owner})
		}
	}
	return owned, nil
}
