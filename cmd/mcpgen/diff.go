package main

import "github.com/rogpeppe/go-internal/diff"

// unifiedDiff returns the changes from old to new as a unified diff with
// three lines of context, or nothing when they are equal. go-internal's
// anchored diff runs in O(n log n) whatever the number of edits, so a
// rewritten file still shows its unchanged lines as context.
func unifiedDiff(name string, old, new []byte) []byte {
	return diff.Diff(name, old, name+" (mcpgen)", new)
}
