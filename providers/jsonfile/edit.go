package jsonfile

import (
	"bytes"
	"fmt"
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
// get their new values where they are, removed ones go with their lines (or separators),
// new ones go at the end of the servers object, and _mcpgen is rewritten (it is mcpgen's
// own). Every other byte of the file, comments and layout included, stays as it was.
//
// It works in two passes: what is replaced or removed, then, in the file that gives, what
// is added after the last member that stays, so that the two never meet in one place.
func (d *document) edit(servers []out, anyOurs bool) ([]byte, error) {
	style := d.style()
	if d.f.CommentRecord {
		style.compact = false // a record is a line comment, on a line of its own
	}
	record, recordNew := d.recordObject(servers, anyOurs)
	inner := style.inner(d.data, d.entries, style.top+style.unit)

	var edits []textEdit
	var added [][2][]byte
	if d.servers >= 0 {
		changes := make([]memberChange, len(d.entries))
		for i := range changes {
			changes[i].remove = true
		}
		for _, s := range servers {
			switch {
			case s.from < 0:
				added = append(added, [2][]byte{d.withMarker(s, inner), s.value})
			case s.kept:
				changes[s.from].remove = false
			default:
				changes[s.from] = memberChange{value: s.value}
			}
		}
		edits = append(edits, d.change(d.members[d.servers].ValAt, d.entries, changes, inner, style)...)
		edits = append(edits, d.markerEdits(servers, changes)...)
	}
	changes := make([]memberChange, len(d.members))
	if d.record >= 0 && !d.f.CommentRecord {
		if record == nil {
			changes[d.record].remove = true
		} else {
			changes[d.record].value = record
		}
	}
	edits = append(edits, d.change(d.start, d.members, changes, style.top, style)...)

	d2, err := parse(d.f, apply(d.data, edits))
	if err != nil {
		return nil, fmt.Errorf("internal error: the merged file does not read back (%v); please report this bug", err)
	}
	var adds []textEdit
	var top [][2][]byte
	if d2.servers >= 0 {
		sm := d2.members[d2.servers]
		adds = append(adds, d2.add(sm.ValAt, d2.entries, added, inner, style)...)
		if recordNew && record != nil {
			end := sm.ValAt + len(sm.Value)
			adds = append(adds, textEdit{start: end, end: end, text: style.member(",", style.top, Str(RecordKey), record)})
		}
	} else {
		var obj objectBuilder
		for _, s := range servers {
			obj.add(s.rawKey, s.value)
		}
		if d.f.CommentRecord && len(servers) > 0 {
			// The records go above the entries: the servers object is added empty,
			// and they are added to it as to any other.
			top = append(top, [2][]byte{Str(d.f.ServersKey), []byte("{}")})
			text := style.eol(apply(d.data, append(adds, d2.add(d2.start, d2.members, top, style.top, style)...)))
			return d.addEntries(text, servers, inner, style)
		}
		top = append(top, [2][]byte{Str(d.f.ServersKey), obj.bytes()})
		if record != nil {
			top = append(top, [2][]byte{Str(RecordKey), record})
		}
	}
	adds = append(adds, d2.add(d2.start, d2.members, top, style.top, style)...)
	return style.eol(apply(d2.data, adds)), nil
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

// change returns the edits that replace the values of the members of the object at
// data[at] that changes gives one, and remove those it says. A removed member goes with its
// lines when it has lines of its own (the comments on lines of their own around it stay),
// else with the separator before it.
func (d *document) change(at int, ms []Member, changes []memberChange, indent string, l layout) []textEdit {
	var edits []textEdit
	if len(ms) == 0 {
		return nil
	}
	end := func(m Member) int { return m.ValAt + len(m.Value) }
	first := slices.IndexFunc(changes, func(c memberChange) bool { return !c.remove })
	lastKept := -1
	for i, c := range changes {
		if !c.remove {
			lastKept = i
		}
	}
	open, last := at+1, end(ms[len(ms)-1])
	lastTail, trailing := d.tail(last)
	if first < 0 {
		if close := skipSpace(d.plain, last); blank(d.data[open:ms[0].At]) && blank(d.data[last:close]) {
			return []textEdit{{start: open, end: close}} // {} it is
		}
	}
	for i, m := range ms {
		c := changes[i]
		if c.value != nil {
			edits = append(edits, textEdit{start: m.ValAt, end: end(m), text: l.value(indent, c.value)})
		}
		if !c.remove {
			continue
		}
		if start, stop, ok := d.lines(m); ok {
			if d.markers != nil && at != d.start && d.markers[i].line[1] == start {
				start = d.markers[i].line[0] // its record goes with it
			}
			edits = append(edits, textEdit{start: start, end: stop})
			continue
		}
		if d.markers != nil && at != d.start && d.markers[i].line[1] > 0 {
			edits = append(edits, textEdit{start: d.markers[i].line[0], end: d.markers[i].line[1]})
		}
		switch {
		case i < first:
			edits = append(edits, textEdit{start: m.At, end: ms[i+1].At})
		case i > 0:
			edits = append(edits, textEdit{start: end(ms[i-1]), end: end(m)})
		default:
			stop := lastTail
			if len(ms) > 1 {
				stop = ms[1].At
			}
			edits = append(edits, textEdit{start: m.At, end: stop})
		}
	}
	if lastKept >= 0 && lastKept < len(ms)-1 && !trailing {
		// The members after the last one that stays are gone, and its comma with them,
		// which strict JSON does not allow after the last member.
		if comma := d.commaAfter(end(ms[lastKept])); comma >= 0 {
			edits = append(edits, textEdit{start: comma, end: comma + 1})
		}
	}
	return edits
}

// lines returns the lines of member m, from the start of its first to past the end of its
// last (its comma and comment there included), when it has lines of its own.
func (d *document) lines(m Member) (start, stop int, ok bool) {
	ind, own := indentOf(d.data, m.At)
	if !own {
		return 0, 0, false
	}
	i, _ := d.tail(m.ValAt + len(m.Value))
	switch {
	case i == len(d.data):
	case d.data[i] == '\n':
		i++
	case d.data[i] == '\r' && i+1 < len(d.data) && d.data[i+1] == '\n':
		i += 2
	default:
		return 0, 0, false // another member follows on the same line
	}
	return m.At - len(ind), i, true
}

// commaAfter returns the offset of the comma that follows the value ending at end, or -1.
func (d *document) commaAfter(end int) int {
	for i := end; i < len(d.plain); i++ {
		switch {
		case d.plain[i] == ',' || d.data[i] == ',' && d.plain[i] == ' ' && !d.inComment(end, i):
			return i
		case d.plain[i] != ' ' && d.plain[i] != '\t' && d.plain[i] != '\r' && d.plain[i] != '\n':
			return -1
		}
	}
	return -1
}

// inComment reports whether data[i] is inside a comment that starts after from.
func (d *document) inComment(from, i int) bool {
	return bytes.IndexByte(d.data[from:i], '/') >= 0
}

// add returns the edits that append added to the object at data[at] with members ms, at
// indent: after the last member, its comma and its comment.
func (d *document) add(at int, ms []Member, added [][2][]byte, indent string, l layout) []textEdit {
	if len(added) == 0 {
		return nil
	}
	if len(ms) == 0 {
		return d.fillEmpty(at+1, added, l)
	}
	last := ms[len(ms)-1].ValAt + len(ms[len(ms)-1].Value)
	tail, comma := d.tail(last)
	var text []byte
	switch {
	case l.compact:
		for _, a := range added {
			text = append(text, l.member(",", indent, a[0], a[1])...)
		}
		return []textEdit{{start: last, end: last, text: text}}
	case comma:
		// The file ends its members with commas (JSONC): the new ones follow the
		// last one's comma and comment, and end with one too.
		for _, a := range added {
			text = append(text, l.member("", indent, a[0], a[1])...)
			text = append(text, ',')
		}
		return []textEdit{{start: tail, end: tail, text: text}}
	}
	for i, a := range added {
		sep := ","
		if i == 0 {
			sep = ""
		}
		text = append(text, l.member(sep, indent, a[0], a[1])...)
	}
	return []textEdit{{start: last, end: last, text: []byte(",")}, {start: tail, end: tail, text: text}}
}

// tail returns where the line of a member that ends at data[end] ends: past the blanks,
// the comma and the comment that follow it on that line (a comment there is the member's),
// and whether a comma was among them.
func (d *document) tail(end int) (int, bool) {
	i, comma, comment := end, false, false
	for ; i < len(d.plain); i++ {
		// A trailing comma is blank in plain, as comments are: the file tells them apart.
		switch c := d.data[i]; {
		case c == ',' && !comma && !comment:
			comma = true
		case c == '/':
			comment = true
		case d.plain[i] != ' ' && d.plain[i] != '\t':
			return i, comma
		}
	}
	return i, comma
}

// fillEmpty returns the edit that puts added into an empty object, whose braces keep what
// they held (blanks aside, unless they hold a comment).
func (d *document) fillEmpty(open int, added [][2][]byte, l layout) []textEdit {
	if len(added) == 0 {
		return nil
	}
	close := skipSpace(d.plain, open)
	if !blank(d.data[open:close]) {
		close = open
	}
	outer, ok := indentOf(d.data, open-1)
	if !ok && open-1 != d.start {
		outer = l.top
	}
	indent := outer + l.unit
	var text []byte
	for i, a := range added {
		sep := ","
		if i == 0 {
			sep = ""
		}
		text = append(text, l.member(sep, indent, a[0], a[1])...)
	}
	if !l.compact {
		text = append(text, '\n')
		text = append(text, outer...)
	}
	return []textEdit{{start: open, end: close, text: text}}
}

// blank reports whether b holds only JSON whitespace.
func blank(b []byte) bool {
	return len(TrimSpace(b)) == 0
}

// apply returns data with edits applied; they do not overlap.
func apply(data []byte, edits []textEdit) []byte {
	slices.SortStableFunc(edits, func(a, b textEdit) int { return a.start - b.start })
	out := make([]byte, 0, len(data)+256)
	at := 0
	for _, e := range edits {
		// Two removals may overlap (a member's lines, and the comma before
		// them): what either removes goes.
		out = append(out, data[at:max(at, e.start)]...)
		out = append(out, e.text...)
		at = max(at, e.end)
	}
	return append(out, data[at:]...)
}

// addEntries adds servers, each with its record, to the servers object of text, which
// edit has just added to the file, empty.
func (d *document) addEntries(text []byte, servers []out, inner string, l layout) ([]byte, error) {
	d2, err := parse(d.f, text)
	if err != nil || d2.servers < 0 {
		return nil, fmt.Errorf("internal error: the merged file does not read back (%v); please report this bug", err)
	}
	var added [][2][]byte
	for _, s := range servers {
		added = append(added, [2][]byte{d.withMarker(s, inner), s.value})
	}
	return l.eol(apply(d2.data, d2.add(d2.members[d2.servers].ValAt, d2.entries, added, inner, l))), nil
}
