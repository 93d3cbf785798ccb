// Package jsonfile merges mcpgen's entries into the JSON config files of agents: the
// mcpServers object of Claude, Gemini, Cursor and most others, and its variants (VS Code's
// servers, opencode's mcp, Zed's context_servers), in JSON or JSONC. It is written once for
// every provider whose file is JSON: what mcpgen owns is recorded beside the servers, under
// "_mcpgen", and everything else in the file is kept.
package jsonfile

import (
	"bytes"
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/providers"
)

// A Format says how an agent's file holds its servers.
type Format struct {
	// Agent names the agent in messages ("Claude reads only the last").
	Agent string
	// ServersKey is the top-level key of the object of servers: "mcpServers", "servers",
	// "mcp", "context_servers", or a literal dotted key such as "amp.mcpServers".
	ServersKey string
	// JSONC: the agent reads comments and trailing commas, which Merge then reads and
	// keeps. Else they are errors, as they are for the agent.
	JSONC bool
	// Reindent writes the whole file anew, indented by two spaces, as Claude does when it
	// writes ~/.claude.json itself. Else Merge edits the file in place: every byte outside
	// the entries it writes, removes or adds (and its record) stays as it was.
	Reindent bool
	// CommentRecord records what mcpgen owns in a comment on the line above each entry,
	// instead of under "_mcpgen", for agents that refuse unknown top-level keys and read
	// comments (opencode). It implies JSONC, and not Reindent.
	CommentRecord bool
}

// The top-level key of mcpgen's record, and its fields. Agents ignore top-level keys they
// do not know (Gemini CLI, which refuses unknown keys inside an entry, accepts it), so the
// record of what mcpgen owns lives beside the servers:
//
//	"_mcpgen": {"managed": {"NAME": {"fingerprint": "sha256:...", "owner": "/home/me/app/mcpgen.toml"}}}
//
// An mcpgen before owners wrote "NAME": "sha256:...", which Merge still reads (an entry
// without owner); such an mcpgen refuses the object form with an error that names its line,
// rather than taking another manifest's entries for its own.
const (
	RecordKey      = "_mcpgen"
	ManagedKey     = "managed"
	fingerprintKey = "fingerprint"
	ownerKey       = "owner"
)

// record is what _mcpgen.managed says of one server.
type record struct {
	fp    string
	owner string
	raw   []byte // as written, to keep the records of other manifests' servers as they are
}

// Merge returns existing with the servers of entries written into its servers object and
// recorded as mcpgen's own under _mcpgen, and the servers that mcpgen owns but entries no
// longer lists removed. entries is the full set, in order.
//
// A server already in the file keeps its place; new servers go at the end of the servers
// object. Every other key and server keeps its place and its content (numbers as written,
// no HTML escaping): with f.Reindent re-indented with two spaces, else byte for byte,
// comments included. When nothing changes, Merge returns a copy of existing, whatever its
// layout. Empty input is read as {}, and gives the fresh rendering of entries.
//
// A server that entries names but someone wrote or edited by hand, and an edited server that
// would be removed, are conflicts: Merge returns a *providers.ConflictError listing them all,
// unless opts.Force. Errors carry line:column, and never come with output.
//
// A UTF-8 byte order mark at the start of existing is read past, and left out of a file that
// changes: RFC 8259 forbids it in JSON that is exchanged and lets readers refuse it (Python's
// json does), while every reader takes the file without it.
func Merge(f Format, existing []byte, entries []providers.Rendered, opts providers.MergeOptions) ([]byte, error) {
	values, err := prepareValues(entries, opts.Owner)
	if err != nil {
		return nil, err
	}
	doc, err := parse(f, bytes.TrimPrefix(existing, providers.UTF8BOM))
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
	if doc.blank && f.CommentRecord {
		// Its records are comments, which only an edit writes: edit {}.
		if doc, err = parse(f, []byte("{}\n")); err != nil {
			return nil, err
		}
		doc.blank = true
	}
	if !doc.blank && doc.unchanged(servers, len(values) > 0) {
		// An edit would rewrite what is there; re-indenting, what is there in another
		// layout, which Merge keeps when nothing changes.
		return bytes.Clone(existing), nil
	}
	var out []byte
	if f.Reindent || doc.blank && !f.CommentRecord {
		out, err = doc.reindent(servers, len(values) > 0)
		if err != nil {
			return nil, err
		}
	} else {
		if out, err = doc.edit(servers, len(values) > 0); err != nil {
			return nil, err
		}
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
	marker string // its record as a comment (Format.CommentRecord)
	fp     string
}

// prepareValues checks the entries, fingerprints them and writes their records.
func prepareValues(entries []providers.Rendered, owner string) ([]entryValue, error) {
	values := make([]entryValue, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := providers.CheckEntryName(e.Name, seen); err != nil {
			return nil, err
		}
		raw := TrimSpace(e.Value)
		fp := e.Fingerprint
		if fp == "" {
			// Else the renderer wrote the value and fingerprinted it: valid JSON.
			if err := Validate(raw); err != nil {
				return nil, fmt.Errorf("entry %q: value %w", e.Name, err)
			}
			fp = fingerprint(raw)
		}
		if kind := KindOf(raw); kind != "an object" {
			return nil, fmt.Errorf("entry %q: value is %s, want a JSON object", e.Name, kind)
		}
		values = append(values, entryValue{name: e.Name, raw: raw, record: recordOf(fp, owner), marker: markerText(owner, fp), fp: fp})
	}
	return values, nil
}

// document is the existing file, split into the members that Merge needs. Offsets are those
// of data and of plain alike: plain is data with its comments blanked (JSONC), else data.
type document struct {
	f       Format
	data    []byte
	plain   []byte
	blank   bool
	start   int      // offset of the top-level object
	members []Member // top level, values from plain
	servers int      // index of the servers key in members, -1 if none
	dupKey  string   // a top-level key that Merge reads, written twice: an error once it matters
	dupAt   [2]int   // offsets of the two keys named dupKey
	entries []Member // of the servers object
	record  int      // index of _mcpgen in members, -1 if none
	fields  []Member // of _mcpgen
	managed map[string]record
	// managedAt are the members of each "managed" object of _mcpgen, as written.
	managedAt [][]Member
	markers   []marker // of the entries, with Format.CommentRecord
}

// Read checks a file of format f and returns the members of its top-level object, the
// servers object's entries and the names that _mcpgen records as mcpgen's, values as
// plain JSON (comments blanked), and plain itself, for the importers.
func Read(f Format, data []byte) (plain []byte, top, entries []Member, managed map[string]bool, err error) {
	doc, err := parse(f, bytes.TrimPrefix(data, providers.UTF8BOM))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	managed = map[string]bool{}
	for name := range doc.managed {
		managed[name] = true
	}
	return doc.plain, doc.members, doc.entries, managed, nil
}

// parse checks existing and splits it. Blank input stands for {}.
func parse(f Format, data []byte) (*document, error) {
	d := &document{f: f, data: data, plain: data, servers: -1, record: -1, managed: map[string]record{}}
	if f.JSONC || f.CommentRecord {
		plain, err := blankComments(data)
		if err != nil {
			return nil, err
		}
		d.plain = plain
	}
	if len(TrimSpace(d.plain)) == 0 {
		d.blank = true
		return d, nil
	}
	if err := Validate(d.plain); err != nil {
		if plain, berr := blankComments(data); !f.JSONC && berr == nil && Validate(plain) == nil && bytes.Contains(comments(data), []byte("/")) {
			return nil, fmt.Errorf("%w: %s reads strict JSON, without comments: remove them, then re-run", err, f.Agent)
		}
		return nil, err
	}
	d.start = len(d.plain) - len(bytes.TrimLeft(d.plain, " \t\r\n"))
	if kind := KindOf(d.plain[d.start:]); kind != "an object" {
		line, col := Position(data, d.start)
		return nil, fmt.Errorf("%d:%d: the file holds %s, but %s reads an object such as {%q: {}}: fix the file, then re-run", line, col, kind, f.Agent, f.ServersKey)
	}
	d.members = Members(d.plain, d.start)
	for i, m := range d.members {
		if m.Key == f.ServersKey || m.Key == RecordKey {
			d.noteKey(i)
		}
	}
	if err := d.readServers(); err != nil {
		return nil, err
	}
	if f.CommentRecord {
		d.readMarkers()
		return d, nil
	}
	if err := d.readRecord(); err != nil {
		return nil, err
	}
	return d, nil
}

// noteKey remembers where the servers key or _mcpgen is, and whether it appears twice.
func (d *document) noteKey(i int) {
	m := d.members[i]
	at := &d.servers
	if m.Key == RecordKey {
		at = &d.record
	}
	if *at >= 0 && d.dupKey == "" {
		d.dupKey, d.dupAt = m.Key, [2]int{d.members[*at].At, m.At}
	}
	*at = i
}

// readServers checks the type of the servers object and splits it.
func (d *document) readServers() error {
	if d.servers < 0 {
		return nil
	}
	m := d.members[d.servers]
	if kind := KindOf(m.Value); kind != "an object" {
		return d.typeError(m, fmt.Sprintf("%q is %s, but %s reads an object of servers: fix or remove it, then re-run", d.f.ServersKey, kind, d.f.Agent))
	}
	d.entries = Members(d.plain, m.ValAt)
	return nil
}

// readRecord checks _mcpgen and reads which servers mcpgen owns.
func (d *document) readRecord() error {
	if d.record < 0 {
		return nil
	}
	m := d.members[d.record]
	const fix = ": fix or remove it, then re-run"
	if kind := KindOf(m.Value); kind != "an object" {
		return d.typeError(m, fmt.Sprintf("%q is %s, but mcpgen keeps an object there, {%q: {...}}%s", RecordKey, kind, ManagedKey, fix))
	}
	d.fields = Members(d.plain, m.ValAt)
	for _, f := range d.fields {
		if f.Key != ManagedKey {
			continue
		}
		if kind := KindOf(f.Value); kind != "an object" {
			return d.typeError(f, fmt.Sprintf("%q.%q is %s, want an object of fingerprints%s", RecordKey, ManagedKey, kind, fix))
		}
		d.managed = map[string]record{}
		d.managedAt = append(d.managedAt, Members(d.plain, f.ValAt))
		for _, r := range d.managedAt[len(d.managedAt)-1] {
			if _, ok := d.managed[r.Key]; ok {
				return d.typeError(r, fmt.Sprintf("%q.%q lists %q twice: delete one, then re-run", RecordKey, ManagedKey, r.Key))
			}
			rec, ok := readEntryRecord(r.Value)
			if !ok {
				return d.typeError(r, fmt.Sprintf("%q.%q.%q is %s, want the record mcpgen wrote, {%q: \"sha256:...\", %q: \"...\"}%s", RecordKey, ManagedKey, r.Key, KindOf(r.Value), fingerprintKey, ownerKey, fix))
			}
			d.managed[r.Key] = rec
		}
	}
	return nil
}

// readEntryRecord reads one server's record: {"fingerprint": ..., "owner": ...}, or the
// fingerprint alone, as an mcpgen before owners wrote it. raw is valid JSON (parse checked
// the file): its members are read as they are, which a file of a hundred servers, read by
// every agent of emit --provider all, would otherwise spend a reflective decode each on.
func readEntryRecord(raw []byte) (record, bool) {
	rec := record{raw: raw}
	switch KindOf(raw) {
	case "a string":
		rec.fp = decodeKey(raw)
		return rec, true
	case "an object":
		seen := false
		for _, m := range Members(raw, 0) {
			switch m.Key {
			case fingerprintKey:
				if KindOf(m.Value) != "a string" {
					return rec, false
				}
				rec.fp, seen = decodeKey(m.Value), true
			case ownerKey:
				switch KindOf(m.Value) {
				case "a string":
					rec.owner = decodeKey(m.Value)
				case "null":
					rec.owner = ""
				default:
					return rec, false
				}
			}
		}
		return rec, seen
	}
	return rec, false
}

// recordOf writes the record of a server that mcpgen writes for owner: the fingerprint
// alone when there is no owner, as mcpgen always wrote it.
func recordOf(fp, owner string) []byte {
	if owner == "" {
		return Str(fp)
	}
	var o objectBuilder
	o.add(Str(fingerprintKey), Str(fp))
	o.add(Str(ownerKey), Str(owner))
	return o.bytes()
}

func (d *document) typeError(m Member, msg string) error {
	line, col := Position(d.data, m.At)
	return fmt.Errorf("%d:%d: %s", line, col, msg)
}

// out is a member of the merged servers object.
type out struct {
	rawKey []byte
	value  []byte
	name   string
	record []byte // its record in _mcpgen.managed; nil for a server mcpgen did not write
	marker string // its record as a comment (Format.CommentRecord); "" for none
	from   int    // its index in the file's servers object; -1 for a new one
	kept   bool   // its value is the file's, as written
}

// merge returns the merged servers in order, and whether there may be changes at all (there
// are none without entries and without servers of this manifest), or the conflicts.
func (d *document) merge(values []entryValue, own providers.Ownership, force bool) ([]out, bool, error) {
	if len(values) == 0 && !d.anyMine(own) {
		return nil, false, nil
	}
	if d.dupKey != "" {
		l1, c1 := Position(d.data, d.dupAt[0])
		l2, c2 := Position(d.data, d.dupAt[1])
		return nil, false, fmt.Errorf("%d:%d: %q appears twice (also at %d:%d), and %s reads only the last: merge them into one, then re-run", l2, c2, d.dupKey, l1, c1, d.f.Agent)
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
	for i, m := range d.entries {
		v := wanted[m.Key]
		st, fp := d.state(m, own, v)
		rec, recorded := d.managed[m.Key]
		legacy := recorded && own.Legacy(rec.owner)
		keep := out{rawKey: m.RawKey, value: m.Value, name: m.Key, from: i, kept: true}
		if d.markers != nil {
			keep.marker = d.markers[i].text(d.data)
		}
		// Unchanged: edited in place, it keeps its layout and its comments; re-indented,
		// it is what the new value would be.
		same := v != nil && v.fp == fp && (!d.f.Reindent || sameCompact(m.Value, v.raw))
		switch providers.Decide(st, v != nil, same, legacy, force) {
		case providers.KeepOurs:
			keep.record, keep.marker = v.record, v.marker
			servers = append(servers, keep)
			placed[v.name] = true
		case providers.Replace:
			servers = append(servers, out{rawKey: m.RawKey, value: v.raw, name: v.name, record: v.record, marker: v.marker, from: i})
			placed[v.name] = true
		case providers.Clash:
			conflicts = append(conflicts, st.Conflict(m.Key, d.line(m), rec.owner))
		case providers.KeepRecord:
			keep.record = rec.raw
			servers = append(servers, keep)
		case providers.Remove: // not written
		case providers.Keep:
			servers = append(servers, keep)
		}
	}
	if len(conflicts) > 0 {
		return nil, false, &providers.ConflictError{Conflicts: conflicts}
	}
	for _, v := range values {
		if !placed[v.name] {
			servers = append(servers, out{rawKey: Str(v.name), value: v.raw, name: v.name, record: v.record, marker: v.marker, from: -1})
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

// duplicateServer reports a server written twice in the servers object, when Merge has to
// change it.
func (d *document) duplicateServer(wanted map[string]*entryValue) error {
	first := make(map[string]int, len(d.entries))
	for _, m := range d.entries {
		at, seen := first[m.Key]
		if !seen {
			first[m.Key] = m.At
			continue
		}
		if _, recorded := d.managed[m.Key]; wanted[m.Key] != nil || recorded {
			l1, c1 := Position(d.data, at)
			l2, c2 := Position(d.data, m.At)
			return fmt.Errorf("%d:%d: server %q appears twice in %q (also at %d:%d), and %s reads only the last: delete one, then re-run", l2, c2, m.Key, d.f.ServersKey, l1, c1, d.f.Agent)
		}
	}
	return nil
}

// state also returns the fingerprint of the file's copy, when it has a record of the
// manifest's: computed once, it is what a merge costs most.
func (d *document) state(m Member, own providers.Ownership, v *entryValue) (providers.EntryState, string) {
	rec, ok := d.managed[m.Key]
	switch {
	case !ok:
		return providers.EntryHandWritten, ""
	case !own.Mine(rec.owner) && !own.Legacy(rec.owner):
		return providers.EntryForeign, ""
	case v != nil && v.fp == rec.fp && sameCompact(m.Value, v.raw):
		// What mcpgen would write, whitespace aside: the same fingerprint, without
		// decoding the value to compute it.
		return providers.EntryOwned, v.fp
	}
	if fp := fingerprint(m.Value); rec.fp == fp {
		return providers.EntryOwned, fp
	}
	return providers.EntryEdited, ""
}

// line is the line of m's key in the file.
func (d *document) line(m Member) int {
	line, _ := Position(d.data, m.At)
	return line
}

// reindent writes the merged document, indented, in the file's line ending: every
// top-level member in its place, the servers object replaced by servers (added at the end
// when new), _mcpgen updated (added right after the servers when new, removed when it holds
// nothing).
func (d *document) reindent(servers []out, anyOurs bool) ([]byte, error) {
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
			top.add(Str(RecordKey), record)
		}
	}
	for i, m := range d.members {
		switch i {
		case d.servers:
			addServers(m.RawKey)
		case d.record:
			if record != nil {
				top.add(m.RawKey, record)
			}
		default:
			top.add(m.RawKey, m.Value)
		}
	}
	if d.servers < 0 {
		addServers(Str(d.f.ServersKey))
	}
	return top.bytes()
}

// recordObject writes the _mcpgen object: its other fields as they were, and managed with
// the record of each server mcpgen wrote (for this manifest, or kept as another's), in the
// order of the servers. It returns nil when the object would be empty, and whether _mcpgen
// is new to the file.
func (d *document) recordObject(servers []out, anyOurs bool) ([]byte, bool) {
	if d.f.CommentRecord {
		return nil, false // the records are comments; a _mcpgen of the file's stays as it is
	}
	var managed []byte
	var m objectBuilder
	for _, s := range servers {
		if s.record != nil {
			m.add(Str(s.name), s.record)
		}
	}
	if anyOurs || !m.empty() {
		managed = m.bytes()
	}
	var record objectBuilder
	for _, f := range d.fields {
		switch {
		case f.Key != ManagedKey:
			record.add(f.RawKey, f.Value)
		case managed != nil:
			record.add(f.RawKey, managed)
			managed = nil // a second "managed" goes
		}
	}
	if managed != nil {
		record.add(Str(ManagedKey), managed)
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

// sameAs reports whether out holds the same JSON as the existing document, whitespace (and
// comments) aside: then Merge has nothing to change.
func (d *document) sameAs(out []byte) bool {
	plain := out
	if d.f.JSONC {
		var err error
		if plain, err = blankComments(out); err != nil {
			return false
		}
	}
	var a, b bytes.Buffer
	if json.Compact(&a, d.plain) != nil || json.Compact(&b, plain) != nil {
		return false
	}
	return bytes.Equal(a.Bytes(), b.Bytes()) && sameComments(d.data, out, d.f.JSONC)
}

// sameComments reports whether a and b hold the same comments: a JSONC file whose only
// change would be a comment is not the same.
func sameComments(a, b []byte, jsonc bool) bool {
	if !jsonc {
		return true
	}
	return bytes.Equal(comments(a), comments(b))
}

// comments returns the bytes of data that blankComments blanks.
func comments(data []byte) []byte {
	plain, err := blankComments(data)
	if err != nil {
		return nil
	}
	var c []byte
	for i := range data {
		if data[i] != plain[i] {
			c = append(c, data[i])
		}
	}
	return c
}

// fingerprint returns the fingerprint of a JSON value, numbers as written.
func fingerprint(raw []byte) string { return providers.FingerprintJSON(raw) }

// Owners returns the servers of a file of format f that _mcpgen records, in the order of
// the servers object, each with the manifest its record names ("" when it names none).
func Owners(f Format, data []byte) ([]providers.Owned, error) {
	doc, err := parse(f, bytes.TrimPrefix(data, providers.UTF8BOM))
	if err != nil {
		return nil, err
	}
	var owned []providers.Owned
	seen := map[string]bool{}
	for _, m := range doc.entries {
		if rec, ok := doc.managed[m.Key]; ok && !seen[m.Key] {
			seen[m.Key] = true
			owned = append(owned, providers.Owned{Name: m.Key, Owner: rec.owner})
		}
	}
	return owned, nil
}

// unchanged reports whether the merge keeps every entry of the file as it is, and its
// record: then nothing is to be written, and edit, which would parse the file again, need
// not run. This is the common case (emit --check, and emit --provider all on files that
// are up to date).
func (d *document) unchanged(servers []out, anyOurs bool) bool {
	if len(servers) != len(d.entries) {
		return false
	}
	for i, s := range servers {
		if s.from != i || !s.kept || d.markers != nil && s.marker != d.markers[i].text(d.data) {
			return false
		}
	}
	if d.f.CommentRecord {
		return true
	}
	if same, ok := d.sameRecords(servers); ok {
		return same
	}
	record, recordNew := d.recordObject(servers, anyOurs)
	switch {
	case recordNew:
		return record == nil
	case record == nil:
		return false
	}
	var a, b bytes.Buffer
	return json.Compact(&a, record) == nil && json.Compact(&b, d.members[d.record].Value) == nil && bytes.Equal(a.Bytes(), b.Bytes())
}

// sameRecords reports, without writing the record, whether the records of servers are
// those the file's one "managed" object holds, in order; ok is false when that takes
// writing it (no "managed" object, or two, or no record to keep).
func (d *document) sameRecords(servers []out) (same, ok bool) {
	if d.record < 0 || len(d.managedAt) != 1 {
		return false, false
	}
	file := d.managedAt[0]
	i := 0
	for _, s := range servers {
		if s.record == nil {
			continue
		}
		if i >= len(file) || file[i].Key != s.name || !sameCompact(file[i].Value, s.record) {
			return false, true
		}
		i++
	}
	if i == 0 {
		return false, false // {} or no _mcpgen: recordObject knows which
	}
	return i == len(file), true
}

// sameCompact reports whether two JSON values are the same bytes but for whitespace
// between tokens. Both are valid JSON: outside strings, whitespace is all that may differ.
func sameCompact(a, b []byte) bool {
	i, j := 0, 0
	inString := false
	for {
		if !inString {
			for i < len(a) && isSpace(a[i]) {
				i++
			}
			for j < len(b) && isSpace(b[j]) {
				j++
			}
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if a[i] != b[j] {
			return false
		}
		switch {
		case inString && a[i] == '\\':
			// The escaped byte is compared next, as text.
			i, j = i+1, j+1
			if i == len(a) || j == len(b) || a[i] != b[j] {
				return false
			}
		case a[i] == '"':
			inString = !inString
		}
		i, j = i+1, j+1
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
