package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"new file", "", "a\nb\n", "--- f\n+++ f (mcpgen)\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"change in the middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- f\n+++ f (mcpgen)\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			"--- f\n+++ f (mcpgen)\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
		{"no final newline", "a", "a\n", "--- f\n+++ f (mcpgen)\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n"},
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

// TestDiffLinesApplies checks on random inputs that the edit script turns a
// into b: keeping the ' ' and '+' lines must give b, the ' ' and '-' ones a.
func TestDiffLinesApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		a := randomLines(r, r.IntN(30))
		b := randomLines(r, r.IntN(30))
		var gotA, gotB []string
		for _, op := range diffLines(a, b) {
			if op.kind != '+' {
				gotA = append(gotA, op.line)
			}
			if op.kind != '-' {
				gotB = append(gotB, op.line)
			}
		}
		if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
			t.Fatalf("case %d: the script does not turn %q into %q", i, a, b)
		}
	}
}

func randomLines(r *rand.Rand, n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("%d\n", r.IntN(4))
	}
	return lines
}
