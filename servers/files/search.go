package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"syscall"
)

// maxMatchText is how much of a matching line a search result shows.
const maxMatchText = 300

// maxSearchDepth is how deep below its base a search goes. Linux allows
// deeper trees (2048 levels fit in PATH_MAX), but no project has them, and
// the walk holds a handle per level.
const maxSearchDepth = 256

// A query is what search_files looks for.
type query struct {
	pattern  string // as given, for messages
	re       *regexp.Regexp
	base     string // the path argument: a directory, or one file
	names    bool   // match paths relative to the root
	contents bool   // match each line of text files
	glob     string // only files whose base name matches this; "" for all
}

// A match is a path whose name matched (line 0) or a line that matched.
type match struct {
	path string
	mode fs.FileMode // name matches: the entry's type
	line int
	text []byte
}

// A found holds the matches of one search and how the search was bounded.
type found struct {
	query   query
	base    string // relative to the root
	matches []match
	files   int   // files whose contents were searched
	large   int   // files skipped for size
	binary  int   // files skipped as binary
	failed  int   // entries that could not be read
	deep    int   // directories not entered, maxSearchDepth levels down
	limited bool  // more than MaxSearchMatches matches: the rest are not shown
	stopped bool  // the walk stopped after MaxSearchEntries entries
	spent   bool  // the walk stopped when it had read its budget of contents
	budget  int64 // how much of the files' contents the search could read
	visited int
}

type searcher struct {
	w    *workspace
	q    query
	out  *found
	left int64 // bytes of file contents the search may still read
}

// search walks below q.base in byte order of names, matching names and
// lines as q says. Symlinks are matched by name but never followed, so the
// walk cannot leave the workspace nor loop; .git directories are skipped.
func (w *workspace) search(ctx context.Context, q query) (*found, error) {
	p, err := w.open(q.base)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(p)
	if err != nil {
		return nil, w.pathError(q.base, p, err)
	}
	s := &searcher{w: w, q: q, out: &found{query: q, base: p, budget: w.scanBudget}, left: w.scanBudget}
	if !fi.IsDir() {
		dir, name := path.Split(p)
		d, err := openDir(w.root, path.Clean(dir))
		if err != nil {
			return nil, w.pathError(q.base, p, err)
		}
		defer d.Close()
		if err := s.entry(ctx, d, p, name, fi); err != nil {
			return nil, err
		}
		return s.out, nil
	}
	checked(p)
	d, err := openDir(w.root, p)
	if err != nil {
		return nil, w.pathError(q.base, p, err)
	}
	defer d.Close()
	if err := s.dir(ctx, d, p, 0); err != nil {
		return nil, err
	}
	return s.out, nil
}

func (s *searcher) full() bool { return s.out.limited || s.out.stopped || s.out.spent }

// dir searches the directory d, whose path is p, depth levels below the
// base. The walk holds a handle on each directory of the current branch,
// so that each step is one call deep; maxSearchDepth bounds the handles.
func (s *searcher) dir(ctx context.Context, d *os.Root, p string, depth int) error {
	names, err := readNames(ctx, d)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.out.failed++
		return nil
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.full() {
			return nil
		}
		if s.out.visited++; s.out.visited > MaxSearchEntries {
			s.out.stopped = true
			return nil
		}
		fi, err := d.Lstat(name)
		if err != nil {
			s.out.failed++
			continue
		}
		sub := join(p, name)
		if !fi.IsDir() {
			if err := s.entry(ctx, d, sub, name, fi); err != nil {
				return err
			}
			continue
		}
		if name == ".git" {
			continue
		}
		if s.q.names && s.q.glob == "" && s.q.re.MatchString(sub) {
			s.add(match{path: sub, mode: fi.Mode()})
		}
		if depth+1 >= maxSearchDepth {
			s.out.deep++
			continue
		}
		checked(sub)
		child, err := openDir(d, name)
		if err != nil {
			s.out.failed++
			continue
		}
		err = s.dir(ctx, child, sub, depth+1)
		child.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// entry matches the file or symlink (never followed) name in d, whose path
// is p. It fails only when ctx ends.
func (s *searcher) entry(ctx context.Context, d *os.Root, p, name string, fi fs.FileInfo) error {
	if s.q.glob != "" {
		if ok, _ := path.Match(s.q.glob, name); !ok {
			return nil
		}
	}
	if s.q.names && s.q.re.MatchString(p) {
		s.add(match{path: p, mode: fi.Mode()})
	}
	if s.q.contents && fi.Mode().IsRegular() && !s.full() {
		return s.lines(ctx, d, p, name, fi.Size())
	}
	return nil
}

// lines matches the lines of the text file name in d, whose path is p. What
// it reads counts against the search's budget; it fails only when ctx ends.
func (s *searcher) lines(ctx context.Context, d *os.Root, p, name string, size int64) error {
	if size > MaxSearchFileBytes {
		s.out.large++
		return nil
	}
	checked(p)
	f, err := d.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		s.out.failed++
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		s.out.failed++
		return nil
	}
	r := &meter{ctx: ctx, r: f, left: s.left}
	defer func() { s.left = r.left }()
	// The head first: a binary file is skipped without reading the rest.
	data := make([]byte, 0, min(size+1, sniffLen))
	data, err = readUpTo(r, data, sniffLen)
	if err == nil && !binary(data) && len(data) == sniffLen {
		data, err = readUpTo(r, data, MaxSearchFileBytes+1)
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errBudget):
		s.out.spent = true
		return nil
	case err != nil:
		s.out.failed++
		return nil
	case len(data) > MaxSearchFileBytes:
		s.out.large++
		return nil
	case binary(data[:min(len(data), sniffLen)]):
		s.out.binary++
		return nil
	}
	s.out.files++
	for n := 1; len(data) > 0 && !s.full(); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if s.q.re.Match(line) {
			s.add(match{path: p, line: n, text: matchText(line)})
		}
	}
	return nil
}

// readUpTo appends what r holds to buf until buf holds n bytes or r ends.
func readUpTo(r io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func (s *searcher) add(m match) {
	if len(s.out.matches) == MaxSearchMatches {
		s.out.limited = true
		return
	}
	s.out.matches = append(s.out.matches, m)
}

// matchText returns a copy of line, cut to maxMatchText bytes.
func matchText(line []byte) []byte {
	if len(line) <= maxMatchText {
		return bytes.Clone(line)
	}
	return append(bytes.Clone(trimPartialRune(line[:maxMatchText])), "…"...)
}

// compilePattern compiles a search pattern, with an error the model can act
// on.
func compilePattern(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, fmt.Errorf(`pattern is empty; give a regular expression, e.g. "func main" or "_test\\.go$"`)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %v (Go RE2 syntax: escape special characters with a backslash)", pattern, err)
	}
	return re, nil
}
