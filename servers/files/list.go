package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
)

// An entry is one name in a directory listing.
type entry struct {
	name string
	mode fs.FileMode // from lstat: a symlink is a symlink
	size int64
	// For symlinks: what the link holds, and why it is not followed when
	// it leads out or loops.
	target string
	why    string
	gone   bool // removed since the directory was read
}

// A listing is what list_directory shows.
type listing struct {
	dir     string // relative to the root, "." for the root
	entries []entry
	total   int // entries in the directory, shown or not
}

// list reads the directory name leads to. It keeps the first MaxListEntries
// names in byte order. Symlinks are described, never followed.
func (w *workspace) list(ctx context.Context, name string) (*listing, error) {
	p, err := w.open(name)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(p)
	if err != nil {
		return nil, w.pathError(name, p, err)
	}
	if err := wantKind(name, fi, true); err != nil {
		return nil, err
	}
	// A handle on the directory keeps each lstat below one call deep.
	checked(p)
	d, err := openDir(w.root, p)
	if err != nil {
		return nil, w.pathError(name, p, err)
	}
	defer d.Close()
	names, err := readNames(ctx, d)
	if err != nil {
		return nil, w.pathError(name, p, err)
	}
	l := &listing{dir: p, total: len(names)}
	if len(names) > MaxListEntries {
		names = names[:MaxListEntries]
	}
	l.entries = make([]entry, 0, len(names))
	for _, n := range names {
		l.entries = append(l.entries, w.describe(d, p, n))
	}
	return l, nil
}

// readNames returns the names in the directory d, sorted.
func readNames(ctx context.Context, d *os.Root) ([]string, error) {
	f, err := d.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch, err := f.Readdirnames(1024)
		names = append(names, batch...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	return names, nil
}

// describe returns the entry for name in the directory d, whose path is
// dir, without following it. An entry that vanished since the directory
// was read is marked gone.
func (w *workspace) describe(d *os.Root, dir, name string) entry {
	e := entry{name: name}
	fi, err := d.Lstat(name)
	if err != nil {
		e.gone = true
		return e
	}
	e.mode, e.size = fi.Mode(), fi.Size()
	if e.mode&fs.ModeSymlink != 0 {
		e.target, _ = d.Readlink(name)
		p := join(dir, name)
		_, err := w.follow(p, p, true)
		var outside *outsideError
		switch {
		case errors.As(err, &outside):
			e.why = "leads outside the workspace; not followed"
		case errors.Is(err, errLoop):
			e.why = "a symlink loop; not followed"
		}
	}
	return e
}

// join joins a directory that follow returned and a name in it.
func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
