package jsonfile

import (
	"strconv"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/providers"
)

// markerPrefix starts the comment that records an entry as mcpgen's, with Format.
// CommentRecord, on the line above the entry: the owner (a JSON string, after "of ") and the
// fingerprint of the entry follow, as in Codex's TOML:
//
//	// mcpgen: managed entry of "/home/me/app/mcpgen.toml" sha256:0123456789ab; edit the manifest and re-run mcpgen emit
const (
	markerPrefix = "// mcpgen: managed entry "
	markerSuffix = "; edit the manifest and re-run mcpgen emit"
)

var markerRE = lazyregexp.New(`^[ \t]*// mcpgen: managed entry (?:of ("(?:[^"\\]|\\.)*") )?(` + providers.FingerprintPrefix + `[0-9a-fA-F]{12})`)

// markerText is the comment that records an entry of owner with fingerprint fp.
func markerText(owner, fp string) string {
	if owner == "" {
		return markerPrefix + fp + markerSuffix
	}
	q := string(Str(owner)) // JSON escapes a line break, which would end the comment
	return markerPrefix + "of " + q + " " + fp + markerSuffix
}

// A marker is where an entry's record comment is: its line (start, and past its line
// break) and the comment itself. The zero value is none.
type marker struct {
	line    [2]int
	comment [2]int
}

func (m marker) text(data []byte) string {
	if m.line[1] == 0 {
		return ""
	}
	return string(data[m.comment[0]:m.comment[1]])
}

// readMarkers finds the record comment of each entry, on the line right above its key, and
// records the entries it names as mcpgen's.
func (d *document) readMarkers() {
	d.markers = make([]marker, len(d.entries))
	for i, m := range d.entries {
		ind, own := indentOf(d.data, m.At)
		if !own {
			continue
		}
		lineStart := m.At - len(ind)
		if lineStart == 0 {
			continue
		}
		prevEnd := lineStart // past the line break above
		prevStart := prevEnd - 1
		for prevStart > 0 && d.data[prevStart-1] != '\n' {
			prevStart--
		}
		line := d.data[prevStart:prevEnd]
		sub := markerRE.FindSubmatch(line)
		if sub == nil {
			continue
		}
		owner := ""
		if len(sub[1]) > 0 {
			if s, err := strconv.Unquote(string(sub[1])); err == nil {
				owner = s
			} else {
				owner = decodeKey(sub[1])
			}
		}
		start := prevStart + len(line) - len(trimLeftBlank(line))
		end := prevEnd - 1
		if end > start && d.data[end-1] == '\r' {
			end--
		}
		d.markers[i] = marker{line: [2]int{prevStart, prevEnd}, comment: [2]int{start, end}}
		if _, dup := d.managed[m.Key]; !dup {
			d.managed[m.Key] = record{fp: string(sub[2]), owner: owner}
		}
	}
}

func trimLeftBlank(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// markerEdits returns the edits that write the record comment of each entry that stays, as
// merge decided it: replaced when it changes, added above an entry that has none.
func (d *document) markerEdits(servers []out, changes []memberChange) []textEdit {
	if d.markers == nil {
		return nil
	}
	var edits []textEdit
	for _, s := range servers {
		if s.from < 0 {
			continue
		}
		mk := d.markers[s.from]
		old := mk.text(d.data)
		switch {
		case s.marker == old:
		case old != "" && s.marker != "":
			edits = append(edits, textEdit{start: mk.comment[0], end: mk.comment[1], text: []byte(s.marker)})
		case old != "":
			edits = append(edits, textEdit{start: mk.line[0], end: mk.line[1]})
		default:
			m := d.entries[s.from]
			ind, _ := indentOf(d.data, m.At)
			edits = append(edits, textEdit{start: m.At, end: m.At, text: []byte(s.marker + "\n" + ind)})
		}
	}
	return edits
}

// withMarker is the key of a new entry, with its record comment on the line above when the
// format records in comments.
func (d *document) withMarker(s out, indent string) []byte {
	if !d.f.CommentRecord || s.marker == "" {
		return s.rawKey
	}
	return append([]byte(s.marker+"\n"+indent), s.rawKey...)
}
