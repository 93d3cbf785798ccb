//go:build !linux && !darwin

package manifest

// SystemReadPaths is empty where mcpgen does not enforce a sandbox yet
// (Windows, the BSDs): there is nothing to add the grants to.
var SystemReadPaths []string
