package codex

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/manifest"
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
	// Force replaces or removes servers written or edited by hand, and overwrites those of
	// another manifest, instead of reporting them as conflicts.
	Force bool
	// Owner is the id of the manifest whose entries these are (manifest.OwnerID): each
	// entry's marker records it, and Merge replaces and removes only the entries it marks
	// (see providers.Ownership). Empty: markers record no owner, and the entries marked
	// without one are the caller's.
	Owner string
	// Aliases are other ids of the same manifest: their entries are its own too, and get
	// Owner in their markers.
	Aliases []string
}

func (o MergeOptions) ownership() providers.Ownership {
	return providers.Ownership{Owner: o.Owner, Aliases: o.Aliases}
}

// markerPrefix starts the comment line that marks a table as mcpgen's own; the owner (a
// quoted string, after "of ") and the fingerprint of the table's content follow it:
//
//	# mcpgen: managed entry of "/home/me/app/mcpgen.toml" sha256:0123456789ab; edit ...
//
// mcpgen before owners wrote no "of": an older mcpgen reads a marker with an owner as no
// marker at all, and so keeps what it does not own (and refuses to overwrite it).
const markerPrefix = "# mcpgen: managed entry "

// markerSuffix ends the marker that Merge writes; reading a marker ignores it.
const markerSuffix = "; edit the manifest and re-run mcpgen emit"

// markerRE reads a marker: the prefix, the owner if there is one, and a fingerprint,
// whatever follows.
var markerRE = lazyregexp.New("^" + regexp.QuoteMeta(markerPrefix) + `(?:of ("(?:[^"\\]|\\.)*") )?(` + providers.FingerprintPrefix + "[0-9a-fA-F]{12})")

// marker writes the marker line of an entry, ended with eol.
func marker(owner, fingerprint, eol string) string {
	if owner == "" {
		return markerPrefix + fingerprint + markerSuffix + eol
	}
	// strconv.Quote escapes every control character: the marker stays one line.
	return markerPrefix + "of " + strconv.Quote(owner) + " " + fingerprint + strings.Replace(markerSuffix, "the manifest", "that manifest", 1) + eol
}

// readMarker returns the owner and the fingerprint that a marker line records.
func readMarker(line []byte) (owner, fingerprint string, ok bool) {
	m := markerRE.FindSubmatch(line)
	if m == nil {
		return "", "", false
	}
	if len(m[1]) > 0 {
		var err error
		if owner, err = strconv.Unquote(string(m[1])); err != nil {
			return "", "", false
		}
	}
	return owner, strings.ToLower(string(m[2])), true
}

// Merge returns existing with the servers of entries written in, each as a table marked as
// mcpgen's own, and the servers that mcpgen owns but entries no longer lists removed (with
// their [mcp_servers.NAME.tools.TOOL] tables). entries is the full set, in order.
//
// A server already in the file keeps its place: its marker and body are rewritten, its header
// and its approval tables ([mcp_servers.NAME.tools.TOOL], which Codex writes) are kept. New
// servers go right after the last mcp_servers table, or at the end of the file. Every other
// byte stays as it was: comments, blank lines, other tables, quoting, CRLF line endings.
//
// Servers marked by another manifest (opts.Owner) are kept as they are. A server that entries
// names but someone wrote or edited by hand or another manifest owns, and an edited server of
// this manifest that would be removed, are conflicts: Merge returns a *providers.ConflictError
// listing them all, unless opts.Force. A server marked without an owner (by an older mcpgen) is
// taken over when entries names it, and kept otherwise. Merge of empty input is the fresh rendering of entries. When nothing
// changes, Merge returns a copy of existing. Errors carry line:column, and never come with
// output.
//
// A UTF-8 byte order mark at the start of existing is kept, as every other byte is: Codex
// reads a file that starts with one.
func Merge(existing []byte, entries []Entry, opts MergeOptions) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(existing, providers.UTF8BOM); ok {
		out, err := merge(rest, entries, opts)
		if err != nil {
			return nil, err
		}
		return append(bytes.Clone(providers.UTF8BOM), out...), nil
	}
	return merge(existing, entries, opts)
}

func merge(existing []byte, entries []Entry, opts MergeOptions) ([]byte, error) {
	eol := lineEnding(existing)
	blocks, err := prepareBlocks(entries, opts.Owner, eol)
	if err != nil {
		return nil, err
	}
	doc, err := parse(existing)
	if err != nil {
		return nil, err
	}
	p, err := doc.plan(blocks, opts.ownership(), opts.Force)
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
func prepareBlocks(entries []Entry, owner, eol string) ([]block, error) {
	blocks := make([]block, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	var p unstable.Parser
	p.KeepComments = true
	for _, e := range entries {
		if err := providers.CheckEntryName(e.Name, seen); err != nil {
			return nil, err
		}
		b, err := prepareEntry(&p, e, owner, eol)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// prepareEntry normalises the body of e (line endings, no blank lines around it, a final
// line ending) and checks, with p, that it is a table's content that Merge can find again.
func prepareEntry(p *unstable.Parser, e Entry, owner, eol string) (block, error) {
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
	return block{name: e.Name, body: body, value: value, marker: marker(owner, providers.Fingerprint(value), eol)}, nil
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
	return "[mcp_servers." + manifest.TOMLKey(b.name) + "]" + eol
}

// text returns a new block: marker, header and body.
func (b block) text(eol string) []byte {
	out := make([]byte, 0, len(b.marker)+len(b.body)+len(b.name)+16)
	out = append(out, b.marker...)
	out = append(out, b.header(eol)...)
	return append(out, b.body...)
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

// Owners returns the servers of a config.toml that carry mcpgen's marker, in file order, each
// with the manifest its marker names ("" when it names none).
func Owners(data []byte) ([]providers.Owned, error) {
	doc, err := parse(bytes.TrimPrefix(data, providers.UTF8BOM))
	if err != nil {
		return nil, err
	}
	var owned []providers.Owned
	for _, s := range doc.order {
		if s.marker >= 0 {
			owned = append(owned, providers.Owned{Name: s.name, Owner: s.owner})
		}
	}
	return owned, nil
}
