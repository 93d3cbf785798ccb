package jsonfile

import (
	"bytes"
	"slices"

	json "github.com/goccy/go-json"
)

// A textEdit replaces data[start:end] with text; start == end inserts.
type textEdit struct {
	start, end int
	text       []byte
}

// memberChange is what happens to one member of an object that edit rewrites in place.
type memberChange struct {
	remove bool
	value  []byte // not nil: the member's new value, compact
}

// edit writes the merged document by editing the file in place: the entries that change
// get their new values where they are, removed ones go with their separator, new ones go
// at the end of the servers object, and _mcpgen is rewritten (mcpgen's own). Every other
// byte of the file, comments and layout included, stays as it was.
func (d *document) edit(servers []out, anyOurs bool) []byte {
	style := d.style()
	var edits []textEdit
	record, recordNew := d.recordObject(servers, anyOurs)

	if d.servers >= 0 {
		sm := d.members[d.servers]
		changes := make([]memberChange, len(d.entries))
		for i := range changes {
			changes[i].remove = true
		}
		var added [][2][]byte
		for _, s := range servers {
			switch {
			case s.from < 0:
				added = append(added, [2][]byte{s.rawKey, s.value})
			case s.kept:
				changes[s.from].remove = false
			default:
				changes[s.from] = memberChange{value: s.value}
			}
		}
		edits = append(edits, d.editObject(sm.ValAt, d.entries, changes, added, style.inner(d.data, d.entries, style.top+style.unit), style)...)
		if recordNew && record != nil {
			end := sm.ValAt + len(sm.Value)
			edits = append(edits, textEdit{start: end, end: end, text: style.member(",", style.top, Str(RecordKey), record)})
		}
	}

	changes := make([]memberChange, len(d.members))
	var added [][2][]byte
	if d.servers < 0 {
		var obj objectBuilder
		for _, s := range servers {
			obj.add(s.rawKey, s.value)
		}
		added = append(added, [2][]byte{Str(d.f.ServersKey), obj.bytes()})
		if record != nil {
			added = append(added, [2][]byte{Str(RecordKey), record})
		}
	}
	if d.record >= 0 {
		if record == nil {
			changes[d.record].remove = true
		} else {
			changes[d.record].value = record
		}
	}
	edits = append(edits, d.editObject(d.start, d.members, changes, added, style.top, style)...)
	return style.eol(apply(d.data, edits))
}

// layout is the indentation of the file, as edit finds and follows it.
type layout struct {
	top     string // of the top-level members
	unit    string // one level
	compact bool   // the file is on one line: new values are compact too
	crlf    bool
}

// style reads the file's layout: the indentation of its first top-level member, and its
// unit (two spaces when the top level is not indented).
func (d *document) style() layout {
	l := layout{unit: "  ", top: "  ", crlf: d.crlf()}
	if len(d.members) == 0 {
		return l
	}
	ind, ok := indentOf(d.data, d.members[0].At)
	if !ok {
		l.compact = true
		return l
	}
	l.top = ind
	if ind != "" {
		l.unit = ind
	}
	return l
}

// inner is the indentation of an object's members: that of its first member, else def.
func (l layout) inner(data []byte, ms []Member, def string) string {
	if len(ms) > 0 {
		if ind, ok := indentOf(data, ms[0].At); ok {
			return ind
		}
	}
	return def
}

// indentOf returns the blanks between the start of at's line and at, and false when at
// is not the first thing on its line.
func indentOf(data []byte, at int) (string, bool) {
	i := at
	for i > 0 && (data[i-1] == ' ' || data[i-1] == '\t') {
		i--
	}
	if i > 0 && data[i-1] != '\n' {
		return "", false
	}
	return string(data[i:at]), true
}

// member writes one member to insert: sep (a comma, or nothing for the first), then, on a
// line of its own at indent, the key and the value, indented below it.
func (l layout) member(sep, indent string, rawKey, value []byte) []byte {
	b := []byte(sep)
	if l.compact {
		b = append(b, rawKey...)
		b = append(b, ':')
		return append(b, value...)
	}
	b = append(b, '\n')
	b = append(b, indent...)
	b = append(b, rawKey...)
	b = append(b, ": "...)
	return append(b, l.value(indent, value)...)
}

// value indents a compact value whose first line is at indent.
func (l layout) value(indent string, value []byte) []byte {
	if l.compact {
		return value
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, value, indent, l.unit); err != nil {
		return value // valid JSON always indents; keep it as it is if not
	}
	return buf.Bytes()
}

// eol turns the line breaks that edit wrote into the file's.
func (l layout) eol(b []byte) []byte {
	if !l.crlf {
		return b
	}
	// The file's own CRLFs stay; only the bare \n that edit wrote change.
	var out []byte
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			out = append(out, '\r')
		}
		out = append(out, c)
	}
	return out
}

// editObject returns the edits that turn the object at data[at] with members ms into one
// where each member is changed as changes says and added follow, at indent.
func (d *document) editObject(at int, ms []Member, changes []memberChange, added [][2][]byte, indent string, l layout) []textEdit {
	var edits []textEdit
	end := func(m Member) int { return m.ValAt + len(m.Value) }
	first := slices.IndexFunc(changes, func(c memberChange) bool { return !c.remove })
	switch {
	case len(ms) == 0:
	case first < 0:
		edits = append(edits, textEdit{start: ms[0].At, end: end(ms[len(ms)-1])})
	case first > 0:
		edits = append(edits, textEdit{start: ms[0].At, end: ms[first].At})
	}
	for i, m := range ms {
		c := changes[i]
		switch {
		case c.remove && i > first && first >= 0:
			edits = append(edits, textEdit{start: end(ms[i-1]), end: end(m)})
		case c.value != nil:
			edits = append(edits, textEdit{start: m.ValAt, end: end(m), text: l.value(indent, c.value)})
		}
	}
	if len(added) == 0 {
		return edits
	}
	var text []byte
	for i, a := range added {
		sep := ","
		if i == 0 && first < 0 {
			sep = ""
		}
		text = append(text, l.member(sep, indent, a[0], a[1])...)
	}
	if len(ms) > 0 {
		if first < 0 && !l.compact {
			text = bytes.TrimPrefix(text, []byte("\n"+indent)) // the removed first member's line and indent stay
		}
		at := end(ms[len(ms)-1])
		return append(edits, textEdit{start: at, end: at, text: text})
	}
	// An empty object: the members go between its braces, which keep what they held
	// (blanks aside, unless they hold a comment).
	open := at + 1
	close := skipSpace(d.plain, open)
	if len(bytes.TrimSpace(d.data[open:close])) > 0 {
		close = open
	}
	if !l.compact {
		text = append(text, '\n')
		if ind, ok := indentOf(d.data, at); ok {
			text = append(text, ind...)
		} else if at != d.start {
			text = append(text, l.top...)
		}
	}
	return append(edits, textEdit{start: open, end: close, text: text})
}

// apply returns data with edits applied; they do not overlap.
func apply(data []byte, edits []textEdit) []byte {
	slices.SortStableFunc(edits, func(a, b textEdit) int { return a.start - b.start })
	out := make([]byte, 0, len(data)+256)
	at := 0
	for _, e := range edits {
		out = append(out, data[at:e.start]...)
		out = append(out, e.text...)
		at = max(at, e.end)
	}
	return append(out, data[at:]...)
}
