package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mcpgen/mcpgen/internal/statefile"
	"github.com/mcpgen/mcpgen/manifest"
)

// Bounds of a path, as on Linux: the symlinks it may pass through, and its
// length once clean (PATH_MAX).
const (
	maxLinks   = 40
	maxPathLen = 4096
)

// A workspace is the directory tree the tools may touch. Every operation goes
// through root, so the kernel-backed checks of os.Root confine it even when
// the tree changes under us; the lexical checks in resolve and follow are
// there to give clear errors and to let symlinks that stay inside work.
type workspace struct {
	root *os.Root
	dir  string // absolute and clean, as configured
	real string // dir with its symlinks resolved, for absolute paths given in that form

	// writing holds a token while a write or an edit runs (see lock.go):
	// models call tools in parallel, and two edits of one file must not
	// lose either. A channel, so that waiting for it can give up.
	writing  chan struct{}
	lockWait time.Duration // the longest a write waits for the locks

	protect    []string // globs that the writing tools refuse (protect.go)
	scanBudget int64    // the most bytes of files one read or search reads
}

func openWorkspace(dir string) (*workspace, error) {
	switch {
	case dir == "":
		return nil, errors.New("no workspace directory; set WORKSPACE_DIR to an absolute path")
	case !filepath.IsAbs(dir):
		return nil, fmt.Errorf("workspace directory %q is not absolute; set WORKSPACE_DIR to an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	evaluated, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace directory %s: %v", dir, unwrapPathError(err))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace directory %s: %v", dir, unwrapPathError(err))
	}
	return &workspace{
		root: root, dir: dir, real: evaluated,
		writing:    make(chan struct{}, 1),
		lockWait:   lockWait,
		protect:    manifest.DefaultProtect,
		scanBudget: MaxScanBytes,
	}, nil
}

// errLoop is wrapped by the errors of paths that loop through symlinks.
var errLoop = errors.New("symlink loop")

// An outsideError says that a path leads out of the workspace, and why.
type outsideError struct {
	name string // the path as given
	dir  string // the workspace
	why  string // which symlink leads out, if one does
}

func (e *outsideError) Error() string {
	if e.why != "" {
		return fmt.Sprintf("path %s is outside the workspace %s: %s", shown(e.name), e.dir, e.why)
	}
	return fmt.Sprintf("path %s is outside the workspace %s; give a path relative to the workspace root", shown(e.name), e.dir)
}

// resolve turns a path argument into a clean path relative to the root:
// "." for the root itself, otherwise a local path (no "..", not absolute).
// An absolute path is accepted when it lies inside the workspace. A name
// written as a Go string literal, as results show names with odd bytes, is
// unquoted first, so that a model can pass back exactly what it was shown.
//
// resolve looks only at the text; follow then deals with symlinks.
func (w *workspace) resolve(name string) (string, error) {
	if name == "" {
		return "", errors.New(`path is empty; use "." for the workspace root`)
	}
	if s, ok := unquote(name); ok {
		name = s
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("path %s contains a NUL byte, which no file name can hold", shown(name))
	}
	p := name
	if filepath.IsAbs(p) {
		rel, ok := w.within(p)
		if !ok {
			return "", &outsideError{name: name, dir: w.dir}
		}
		p = rel
	}
	p = filepath.Clean(p)
	if !filepath.IsLocal(p) {
		return "", &outsideError{name: name, dir: w.dir}
	}
	if len(p) > maxPathLen {
		return "", fmt.Errorf("path %s is longer than %d bytes; no file can have it", shown(name), maxPathLen)
	}
	return filepath.ToSlash(p), nil
}

// within returns abs relative to the workspace, if abs lies inside it, as
// configured or with its symlinks resolved. It does not look at the disk.
func (w *workspace) within(abs string) (string, bool) {
	for _, base := range []string{w.dir, w.real} {
		rel, err := filepath.Rel(base, filepath.Clean(abs))
		if err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// follow resolves the symlinks along rel, a path that resolve returned, and
// returns the same file's path without symlinks. With last false it leaves
// the final component alone, as lstat does. It fails with an *outsideError
// when a symlink leads out of the workspace, and on loops.
//
// Relative and absolute symlinks that stay inside work (os.Root refuses
// absolute ones). Where a component does not exist the rest is returned as
// it is, so that writes can create it; name is the path as given, for
// messages.
//
// The walk holds a handle on the directory it has reached, so that each
// step costs one call whatever the depth.
func (w *workspace) follow(name, rel string, last bool) (string, error) {
	var (
		done  []string // resolved, symlink-free components
		dir   = w.root // the directory done names; closed when replaced
		rest  = split(rel)
		links int
		why   string // the last symlink followed, to explain an escape
	)
	cd := func(d *os.Root) {
		if dir != w.root {
			dir.Close()
		}
		dir = d
	}
	defer cd(nil)
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", &outsideError{name: name, dir: w.dir, why: why}
			}
			done = done[:len(done)-1]
			if len(done) == 0 {
				cd(w.root)
				continue
			}
			d, err := openDir(w.root, strings.Join(done, "/"))
			if err != nil {
				return "", w.pathError(name, strings.Join(done, "/"), err)
			}
			cd(d)
			continue
		}
		if len(rest) == 0 && !last {
			done = append(done, c)
			break
		}
		fi, err := dir.Lstat(c)
		if err != nil {
			p := strings.Join(append(done, c), "/")
			// The operation itself reports that the file is missing;
			// only a ".." after a missing directory could still change
			// where the path lands, so refuse that here.
			if errors.Is(err, fs.ErrNotExist) && !slices.Contains(rest, "..") {
				return strings.Join(append(split(p), rest...), "/"), nil
			}
			return "", w.pathError(name, p, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			p := strings.Join(append(done, c), "/")
			if links++; links > maxLinks {
				return "", fmt.Errorf("path %s: %w: more than %d symlinks to follow, at %s", shown(name), errLoop, maxLinks, shown(p))
			}
			target, err := dir.Readlink(c)
			if err != nil {
				return "", w.pathError(name, p, err)
			}
			why = fmt.Sprintf("%s is a symlink to %s", shown(p), shown(target))
			if filepath.IsAbs(target) {
				inside, ok := w.within(target)
				if !ok {
					return "", &outsideError{name: name, dir: w.dir, why: why}
				}
				done, target = done[:0], inside
				cd(w.root)
			}
			rest = append(split(target), rest...)
		case len(rest) == 0:
			done = append(done, c)
		case fi.IsDir():
			checked(strings.Join(append(done, c), "/"))
			d, err := openDir(dir, c)
			if err != nil {
				return "", w.pathError(name, strings.Join(append(done, c), "/"), err)
			}
			cd(d)
			done = append(done, c)
		default:
			return "", w.pathError(name, strings.Join(append(done, c), "/"), syscall.ENOTDIR)
		}
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

// open resolves a path argument fully: the result names the file that the
// path leads to, with no symlink left in the part that exists.
func (w *workspace) open(name string) (string, error) {
	rel, err := w.resolve(name)
	if err != nil {
		return "", err
	}
	return w.follow(name, rel, true)
}

// split cuts a slash-separated path into its components, dropping empty ones.
func split(p string) []string {
	return strings.FieldsFunc(filepath.ToSlash(p), func(r rune) bool { return r == '/' })
}

// pathError rewrites an error from the file system for the model: the path
// as it was given first, then what is wrong, then what to do. p is the
// resolved path that failed.
func (w *workspace) pathError(name, p string, err error) error {
	var outside *outsideError
	if errors.As(err, &outside) {
		return err
	}
	inner := unwrapPathError(err)
	switch {
	case inner.Error() == "path escapes from parent":
		// os.Root caught what follow did not see: the tree changed
		// between the two, or a symlink was swapped in.
		return &outsideError{name: name, dir: w.dir, why: "it passes through a symlink that leads outside"}
	case errors.Is(err, fs.ErrNotExist):
		dir := path.Dir(p)
		for dir != "." {
			if fi, err := w.root.Stat(dir); err == nil && fi.IsDir() {
				break
			}
			dir = path.Dir(dir)
		}
		if dir == "." {
			return fmt.Errorf("path %s does not exist (list_directory shows what the workspace root holds)", shown(name))
		}
		return fmt.Errorf("path %s does not exist (list_directory %s shows what is there)", shown(name), shown(dir))
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("path %s: a component of it is a file, not a directory", shown(name))
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("path %s: %w: too many levels of symlinks", shown(name), errLoop)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("path %s: file name too long", shown(name))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("path %s: permission denied", shown(name))
	}
	return fmt.Errorf("path %s: %v", shown(name), inner)
}

// unwrapPathError drops the operation and path of an *fs.PathError: they
// name the resolved path, which would only confuse.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// quote returns name as results show it: as is when it reads unambiguously,
// else as a Go string literal (invalid UTF-8, control characters, unusual
// spaces, leading or trailing spaces, a leading double quote). resolve
// accepts both forms.
func quote(name string) string {
	if needsQuote(name) {
		return strconv.Quote(name)
	}
	return name
}

func needsQuote(name string) bool {
	if name == "" || !utf8.ValidString(name) || name[0] == '"' ||
		name[0] == ' ' || name[len(name)-1] == ' ' {
		return true
	}
	for _, r := range name {
		if !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

// unquote reads name as a Go string literal in double quotes, if it is one.
func unquote(name string) (string, bool) {
	if len(name) < 2 || name[0] != '"' || name[len(name)-1] != '"' {
		return "", false
	}
	s, err := strconv.Unquote(name)
	return s, err == nil
}

// openFile opens p, a path that follow returned, for reading. It never
// blocks: the open is non-blocking, so that a named pipe or a device swapped
// in for the file cannot stall the server, and the type that counts is the
// one of the opened descriptor (fstat), not the one a look at the path saw
// before. Anything but a regular file (or, with dir, a directory) is
// refused.
func (w *workspace) openFile(name, p string, dir bool) (*os.File, fs.FileInfo, error) {
	fi, err := w.root.Stat(p)
	if err != nil {
		return nil, nil, w.pathError(name, p, err)
	}
	if err := wantKind(name, fi, dir); err != nil {
		return nil, nil, err
	}
	checked(p)
	f, err := w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, w.pathError(name, p, err)
	}
	if fi, err = f.Stat(); err == nil {
		err = wantKind(name, fi, dir)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// openDir opens the directory name in d as a root. os.Root.OpenRoot opens
// its last component without O_DIRECTORY and blocking, so that a named pipe
// swapped in for a directory after a check would block the server until a
// writer came. With "/." appended, name is opened as a directory on the way
// (O_DIRECTORY: a pipe fails with ENOTDIR) and "." is the directory itself.
func openDir(d *os.Root, name string) (*os.Root, error) {
	return d.OpenRoot(name + "/.")
}

// testHookChecked, set only by tests, runs between the check of a path and
// the open that follows it: where a path swapped for something else must
// not do harm. p is relative to the workspace root.
var testHookChecked func(p string)

func checked(p string) {
	if testHookChecked != nil {
		testHookChecked(p)
	}
}

func wantKind(name string, fi fs.FileInfo, dir bool) error {
	switch {
	case dir && !fi.IsDir():
		return fmt.Errorf("path %s is %s, not a directory (read_file or file_info tell more)", shown(name), statefile.Kind(fi.Mode()))
	case !dir && fi.IsDir():
		return fmt.Errorf("path %s is a directory, not a file (list_directory shows what it holds)", shown(name))
	case !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("path %s is %s, not a regular file", shown(name), statefile.Kind(fi.Mode()))
	}
	return nil
}

// shown quotes a path argument for a message, cutting a very long one.
func shown(name string) string {
	const cut = 200
	if len(name) > cut {
		return strconv.Quote(name[:cut]) + "..."
	}
	return strconv.Quote(name)
}
