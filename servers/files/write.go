package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/mcpgen/mcpgen/internal/statefile"
)

// write creates or replaces the file name leads to with data, creating its
// missing parent directories. A symlink that stays inside is followed: the
// file it leads to is replaced and the link kept. It reports whether the
// file is new. Paths that the protect list covers are refused.
func (w *workspace) write(ctx context.Context, name string, data []byte) (created bool, err error) {
	p, err := w.open(name)
	if err != nil {
		return false, err
	}
	if p == "." {
		return false, fmt.Errorf("path %s is the workspace root, a directory; name a file in it", shown(name))
	}
	if err := w.refuseProtected(name, p); err != nil {
		return false, err
	}
	dir := path.Dir(p)
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o777); err != nil {
			return false, w.pathError(name, p, err)
		}
	}
	unlock, err := w.lock(ctx, name, dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	perm, exists, err := w.existing(name, p)
	if err != nil {
		return false, err
	}
	if err := w.replace(name, p, data, perm, exists, nil); err != nil {
		return false, err
	}
	return !exists, nil
}

// existing returns the mode of the regular file at p, if there is one.
func (w *workspace) existing(name, p string) (perm fs.FileMode, exists bool, err error) {
	fi, err := w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, false, nil
	case err != nil:
		return 0, false, w.pathError(name, p, err)
	case fi.IsDir():
		return 0, false, fmt.Errorf("path %s is a directory; name a file", shown(name))
	case !fi.Mode().IsRegular():
		return 0, false, fmt.Errorf("path %s is %s; only regular files can be written", shown(name), statefile.Kind(fi.Mode()))
	}
	return keptMode(fi.Mode()), true, nil
}

// keptMode is the part of a file's mode that a replaced file keeps: its
// permissions and the sticky bit, but not setuid and setgid, which the
// kernel clears too when a program writes to a file. Otherwise a model
// could turn a setuid program of someone else's into its own code.
func keptMode(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSticky)
}

// replace writes data to a new file next to p and renames it over p, so
// that a reader sees the old content or the new, never a part. With keep,
// the new file gets perm, the mode of the file it replaces; otherwise the
// default mode less the umask, as for any new file. The owner is not kept,
// and a hard link to the old file keeps the old content. check, if not
// nil, runs just before the rename: its error leaves p as it was.
func (w *workspace) replace(name, p string, data []byte, perm fs.FileMode, keep bool, check func() error) (err error) {
	tmp, f, err := w.createTemp(name, p)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			w.root.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil && keep {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && check != nil {
		if err = check(); err != nil {
			return err
		}
	}
	if err == nil {
		err = w.root.Rename(tmp, p)
	}
	if err != nil {
		return w.pathError(name, p, err)
	}
	return nil
}

// createTemp creates an empty file with a fresh name in p's directory.
func (w *workspace) createTemp(name, p string) (string, *os.File, error) {
	var b [8]byte
	for range 10 {
		rand.Read(b[:])
		tmp := path.Join(path.Dir(p), ".mcpgen-write-"+hex.EncodeToString(b[:]))
		f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, w.pathError(name, p, err)
		}
		return tmp, f, nil
	}
	return "", nil, fmt.Errorf("path %s: cannot create a temporary file next to it", shown(name))
}

// An edit is what edit_file did.
type edit struct {
	count int  // occurrences replaced
	line  int  // the line of the first, from 1
	crlf  bool // the texts were matched with CRLF line endings
}

// edit replaces oldText with newText in the file name leads to: the one
// occurrence, or with all every occurrence. Zero occurrences, or several
// without all, change nothing and say what to do instead.
//
// The file is read and replaced under the write locks, so that no edit of
// this server or of another files server on the workspace is lost. A
// program that takes no lock (an editor, a tool) may still change the file
// meanwhile: just before the rename the file is checked again, and when it
// is no longer what was read, nothing is written and the model is told to
// read it again.
func (w *workspace) edit(ctx context.Context, name, oldText, newText string, all bool) (*edit, error) {
	switch {
	case oldText == "":
		return nil, errors.New("old_text is empty; give the exact text to replace (write_file creates or replaces a whole file)")
	case oldText == newText:
		return nil, errors.New("old_text and new_text are the same; there is nothing to change")
	}
	p, err := w.open(name)
	if err != nil {
		return nil, err
	}
	if err := w.refuseProtected(name, p); err != nil {
		return nil, err
	}
	unlock, err := w.lock(ctx, name, path.Dir(p))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Everything below reads the descriptor that was opened without
	// blocking and checked to be a regular file, never the path again: a
	// pipe swapped in for the file cannot block the edit.
	f, fi, err := w.openFile(name, p, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return fmt.Errorf("file %s is %s, more than edit_file's limit of %s; use write_file to replace it whole", shown(name), sizeText(size), sizeText(MaxEditBytes))
	}
	if fi.Size() > MaxEditBytes {
		return nil, tooLarge(fi.Size())
	}
	checked(p)
	data, err := readUpTo(f, make([]byte, 0, fi.Size()+1), MaxEditBytes+1)
	if err != nil {
		return nil, w.pathError(name, p, err)
	}
	if len(data) > MaxEditBytes {
		return nil, tooLarge(int64(len(data)))
	}
	if binary(data[:min(len(data), sniffLen)]) {
		return nil, fmt.Errorf("file %s is binary (NUL bytes in its first 8 KB); edit_file edits text files only", shown(name))
	}
	content := string(data)

	e := &edit{count: strings.Count(content, oldText)}
	if e.count == 0 && strings.Contains(content, "\r\n") && strings.Contains(oldText, "\n") && !strings.Contains(oldText, "\r\n") {
		// The model saw the file's lines without their carriage returns.
		crlf := strings.ReplaceAll(oldText, "\n", "\r\n")
		if n := strings.Count(content, crlf); n > 0 {
			oldText, newText = crlf, strings.ReplaceAll(newText, "\n", "\r\n")
			e.count, e.crlf = n, true
		}
	}
	switch {
	case e.count == 0:
		return nil, notFound(name, content, oldText)
	case e.count > 1 && !all:
		return nil, fmt.Errorf("old_text occurs %d times in %s (at lines %s); add surrounding lines to old_text so that it occurs once, or set replace_all to replace every occurrence",
			e.count, shown(name), lineList(lineNumbers(content, oldText)))
	}
	e.line = 1 + strings.Count(content[:strings.Index(content, oldText)], "\n")
	n := 1
	if all {
		n = -1
	}
	unchanged := func() error { return w.unchanged(name, p, f, fi, data) }
	if err := w.replace(name, p, []byte(strings.Replace(content, oldText, newText, n)), keptMode(fi.Mode()), true, unchanged); err != nil {
		return nil, err
	}
	return e, nil
}

// unchanged checks that p is still the file f, which was was when data was
// read from it, and that it still holds data.
func (w *workspace) unchanged(name, p string, f *os.File, was fs.FileInfo, data []byte) error {
	checked(p)
	now, err := w.root.Lstat(p)
	same := err == nil && os.SameFile(was, now)
	if same {
		if same, err = holds(f, data); err != nil {
			return w.pathError(name, p, err)
		}
	}
	if !same {
		return fmt.Errorf("file %s changed while edit_file was working on it (another program wrote or replaced it); nothing was written: read_file it again and redo the edit", shown(name))
	}
	return nil
}

// holds reports whether f holds exactly data, reading it a chunk at a time.
func holds(f *os.File, data []byte) (bool, error) {
	buf := make([]byte, min(len(data)+1, 32<<10))
	for off := 0; ; {
		n, err := f.ReadAt(buf, int64(off))
		if n > len(data)-off || !bytes.Equal(buf[:n], data[off:off+n]) {
			return false, nil
		}
		off += n
		switch {
		case errors.Is(err, io.EOF):
			return off == len(data), nil
		case err != nil:
			return false, err
		}
	}
}

// notFound explains why old is not in content, pointing at the lines where
// its first line appears, if it does: the difference is further on.
func notFound(name, content, old string) error {
	first, _, _ := strings.Cut(strings.TrimLeft(old, "\r\n"), "\n")
	first = strings.TrimSpace(first)
	var at []int
	if first != "" {
		for i, line := range strings.Split(content, "\n") {
			if strings.TrimSpace(line) == first {
				at = append(at, i+1)
			}
		}
	}
	if len(at) == 0 {
		return fmt.Errorf("old_text was not found in %s; it must match the file exactly, whitespace and indentation included: read_file the lines and copy them", shown(name))
	}
	return fmt.Errorf("old_text was not found in %s, but its first line appears at %s; the text differs after it (whitespace and indentation count): read_file those lines and copy them exactly", shown(name), lineWord(len(at))+" "+lineList(at))
}

// lineNumbers returns the line of each occurrence of s in content.
func lineNumbers(content, s string) []int {
	var at []int
	line, from := 1, 0
	for {
		i := strings.Index(content[from:], s)
		if i < 0 {
			return at
		}
		line += strings.Count(content[from:from+i], "\n")
		at = append(at, line)
		line += strings.Count(s, "\n")
		from += i + len(s)
	}
}

func lineWord(n int) string {
	if n == 1 {
		return "line"
	}
	return "lines"
}

// lineList writes line numbers as "4, 19 and 33", the first few only.
func lineList(at []int) string {
	const show = 8
	var b strings.Builder
	for i, n := range at[:min(len(at), show)] {
		switch {
		case i == 0:
		case i == len(at)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprint(&b, n)
	}
	if len(at) > show {
		fmt.Fprintf(&b, " and %d more", len(at)-show)
	}
	return b.String()
}
