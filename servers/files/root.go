package files

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkRoot refuses a workspace that is the root of a file system or the
// user's home directory, unless broad: an agent started from / or from ~
// without WORKSPACE_DIR would hand the model every file, the user's keys
// and configs among them. Both are compared with their symlinks resolved.
func checkRoot(dir string, broad bool) error {
	if broad {
		return nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = filepath.Clean(dir)
	}
	const fix = "start the agent in the project's directory or set WORKSPACE_DIR; to serve it on purpose, name it in the manifest (workspace.dir)"
	if filepath.Dir(real) == real {
		return fmt.Errorf("workspace directory %s is the root of the file system, which the files server does not serve unless the manifest names it: %s", dir, fix)
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
		if real == filepath.Clean(home) {
			return fmt.Errorf("workspace directory %s is your home directory, with your keys and configs, which the files server does not serve unless the manifest names it: %s", dir, fix)
		}
	}
	return nil
}
