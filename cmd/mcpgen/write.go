package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/launcher"
)

// resolveLinks follows a symlinked config file (a dotfiles checkout, say)
// so that writing it replaces the file the link points to, not the link.
func resolveLinks(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		if _, lerr := os.Lstat(path); lerr == nil {
			return "", fmt.Errorf("%s is a symlink to a file that does not exist: fix the link or remove it", path)
		}
		return path, nil
	}
	if err != nil {
		// A loop of links (filepath's "too many links"), or a link through a
		// file that is no directory: name the file, which the error does not.
		return "", fmt.Errorf("%s: cannot follow its symlinks (%v): fix the link or remove it", path, err)
	}
	return real, nil
}

// checkWritable refuses to replace a file whose mode makes it read-only:
// someone made it so on purpose (a config under change control, a file
// an administrator pinned), and the rename of an atomic write would replace
// it all the same. A file that does not exist yet is writable.
func checkWritable(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o200 != 0 {
		return nil
	}
	return fmt.Errorf("%s is read-only (mode %04o): mcpgen does not replace it; make it writable, or re-run with --force (which keeps its mode)", path, fi.Mode().Perm())
}

// writeFile replaces path with data atomically: a temporary file in the same
// directory, synced, then renamed over it, so a crash leaves the old file or
// the new one, never half of one. An existing file keeps its mode and its
// content is kept where backupPath says, readable by its owner alone, whose
// name it returns; a new file gets mode and, if needed, its directory
// (0700). project is the root of the project whose config path is, or "".
func writeFile(path string, data []byte, mode os.FileMode, project string) (backup string, err error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
		if backup, err = backupPath(path, project); err != nil {
			return "", fmt.Errorf("keeping a backup of %s: %w", path, err)
		}
		// Private, as the state dir's own directories are.
		if err := os.MkdirAll(filepath.Dir(backup), 0o700); err != nil {
			return "", fmt.Errorf("keeping a backup of %s: %w", path, err)
		}
		// The owner's alone: what it holds may be secrets that the new
		// content references (mcpgen import, then emit --force).
		if err := writeAtomic(backup, old, mode&0o600); err != nil {
			return "", fmt.Errorf("keeping a backup of %s: %w", path, err)
		}
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", err
		}
	default:
		return "", err
	}
	return backup, writeAtomic(path, data, mode)
}

// writeAtomic replaces the file at path with data: a reader sees the old
// content or the new, never a part.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := writeTemp(path, data, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op once renamed
	return os.Rename(tmp, path)
}

// writeTemp writes data, synced and with mode, to a new temporary file
// beside path, and returns its name for the caller to rename or link into
// place (or remove).
func writeTemp(path string, data []byte, mode os.FileMode) (string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// backupDir is the directory of mcpgen's state dir (the workspaces' logs
// are its siblings) where the backups of project files go. A workspace id
// cannot start with "_", so it is no workspace's.
const backupDir = "_backups"

// backupPath returns where the content that a write of path replaces is
// kept; it makes nothing. Beside it, path.bak, unless path is in a
// project: in a git work tree, or in the project whose root is project
// (the configs of --scope project). There a .bak would sit in the work
// tree, seen by git and one `git add .` away from being committed and
// pushed with whatever it held (the tokens that import has just made
// references of). So it goes to mcpgen's state dir, outside every work
// tree and private to the user: _backups/NAME-HASH/REL.bak, NAME the
// project directory's name, HASH the start of a hash of its absolute path
// (two checkouts of one name stay apart), REL the file's path in the
// project.
func backupPath(path, project string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(real, filepath.Base(abs))
	}
	root, ok := gitRoot(filepath.Dir(abs))
	if !ok && project != "" {
		if root, err = filepath.Abs(project); err != nil {
			return "", err
		}
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		ok = true
	}
	rel, err := filepath.Rel(root, abs)
	if !ok || err != nil || !filepath.IsLocal(rel) {
		return path + ".bak", nil
	}
	state, err := launcher.StateDirPath(backupDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	name := unsafeName.ReplaceAllString(filepath.Base(root), "_") + "-" + hex.EncodeToString(sum[:4])
	return filepath.Join(state, name, rel+".bak"), nil
}

// unsafeName matches what a directory name of the state dir leaves out.
var unsafeName = lazyregexp.New(`[^A-Za-z0-9._-]+`)

// gitRoot returns the root of the git work tree that holds dir: the
// nearest directory, dir or above, with a .git (a directory, or the file
// of a worktree or a submodule).
func gitRoot(dir string) (string, bool) {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		up := filepath.Dir(d)
		if up == d {
			return "", false
		}
		d = up
	}
}
