package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	return real, err
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
// content is kept in path.bak, whose name it returns; a new file gets mode
// and, if needed, its directory (0700).
func writeFile(path string, data []byte, mode os.FileMode) (backup string, err error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
		backup = path + ".bak"
		if err := writeAtomic(backup, old, mode); err != nil {
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
