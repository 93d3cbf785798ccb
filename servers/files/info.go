package files

import (
	"io/fs"
)

// An info is what file_info tells about a path.
type info struct {
	path string      // the entry itself, relative to the root
	stat fs.FileInfo // from lstat: a symlink is a symlink
	// For symlinks: what the link holds, where it leads, and what is
	// there (nil when nothing is).
	target   string
	resolved string
	dest     fs.FileInfo
}

// info describes the entry that name names, without following it when it
// is a symlink, but refusing a symlink that leads out of the workspace just
// as every other tool does.
func (w *workspace) info(name string) (*info, error) {
	rel, err := w.resolve(name)
	if err != nil {
		return nil, err
	}
	full, err := w.follow(name, rel, true)
	if err != nil {
		return nil, err
	}
	p, err := w.follow(name, rel, false)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Lstat(p)
	if err != nil {
		return nil, w.pathError(name, p, err)
	}
	in := &info{path: p, stat: fi}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if in.target, err = w.root.Readlink(p); err != nil {
			return nil, w.pathError(name, p, err)
		}
		in.resolved = full
		in.dest, _ = w.root.Stat(full)
	}
	return in, nil
}
