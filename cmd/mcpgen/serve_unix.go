//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/mcpgen/mcpgen/manifest"
)

// execServer replaces mcpgen with a command server, its manifest resolved:
// the agent talks to the server itself, and no mcpgen process stays behind.
func execServer(m *manifest.Manifest, s *manifest.Server, c *manifest.Context) error {
	p, env, err := serverProcess(m, s, c)
	if err != nil {
		return err
	}
	path, err := lookPathIn(p.Path, env)
	if err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	if err := os.Chdir(p.Dir); err != nil {
		return fmt.Errorf("server %q: working directory: %w", s.Name, err)
	}
	err = syscall.Exec(path, append([]string{p.Path}, p.Args...), env)
	return fmt.Errorf("server %q: exec %s: %w", s.Name, path, err)
}

// lookPathIn finds a program the way the server's own environment would:
// with its PATH, which the manifest may have changed.
func lookPathIn(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return exec.LookPath(file)
	}
	for _, kv := range slices.Backward(env) {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range strings.Split(path, ":") {
				if dir == "" {
					dir = "."
				}
				if p, err := exec.LookPath(dir + "/" + file); err == nil {
					return p, nil
				}
			}
			return "", fmt.Errorf("command %q not found on PATH (%s)", file, path)
		}
	}
	return exec.LookPath(file)
}
