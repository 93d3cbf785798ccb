package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestUnifiedDiff checks what emit --diff and --check show, by input.
func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"new file", "", "a\nb\n", "diff f f (mcpgen)\n--- f\n+++ f (mcpgen)\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"change in the middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"diff f f (mcpgen)\n--- f\n+++ f (mcpgen)\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"no final newline", "a", "a\n", "diff f f (mcpgen)\n--- f\n+++ f (mcpgen)\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(unifiedDiff("f", []byte(tt.old), []byte(tt.new)))
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestUnifiedDiffManyEdits is the regression test for the hand-written
// Myers diff, which gave up past 1,000 edits and showed the whole file as
// replaced: 3,000 lines with every second one changed (3,000 edits) must
// show the 1,500 changed lines, not 3,000.
func TestUnifiedDiffManyEdits(t *testing.T) {
	var old, new bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&old, "key%d = %d\n", i, i)
		if i%2 == 0 {
			fmt.Fprintf(&new, "key%d = %d # changed\n", i, i)
		} else {
			fmt.Fprintf(&new, "key%d = %d\n", i, i)
		}
	}
	got := unifiedDiff("big.toml", old.Bytes(), new.Bytes())
	var minus, plus int
	for _, line := range strings.Split(string(got), "\n") {
		switch {
		case strings.HasPrefix(line, "---"), strings.HasPrefix(line, "+++"):
		case strings.HasPrefix(line, "-"):
			minus++
		case strings.HasPrefix(line, "+"):
			plus++
		}
	}
	if minus != 1500 || plus != 1500 {
		t.Errorf("removed %d and added %d lines, want 1500 and 1500", minus, plus)
	}
}
