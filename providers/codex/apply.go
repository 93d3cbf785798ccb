package codex

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
