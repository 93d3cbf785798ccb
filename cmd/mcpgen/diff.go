package main

import (
	"bytes"
	"fmt"
	"strings"
)

// unifiedDiff returns the changes from old to new as a unified diff with
// three lines of context, or nothing when they are equal.
func unifiedDiff(name string, old, new []byte) []byte {
	if bytes.Equal(old, new) {
		return nil
	}
	a, b := splitLines(old), splitLines(new)
	ops := diffLines(a, b)
	var out bytes.Buffer
	fmt.Fprintf(&out, "--- %s\n+++ %s (mcpgen)\n", name, name)
	const context = 3
	for i := 0; i < len(ops); {
		// Find the next change, then extend the hunk while changes are
		// closer than twice the context.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-context)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
			} else if j-end >= 2*context {
				break
			}
		}
		end = min(len(ops), end+context)
		writeHunk(&out, ops[start:end])
		i = end
	}
	return out.Bytes()
}

type diffOp struct {
	kind         byte // ' ', '-' or '+'
	line         string
	aLine, bLine int // 1-based line numbers in a and b
}

func writeHunk(out *bytes.Buffer, ops []diffOp) {
	var aStart, bStart, aCount, bCount int
	for _, op := range ops {
		if op.kind != '+' {
			if aCount == 0 {
				aStart = op.aLine
			}
			aCount++
		}
		if op.kind != '-' {
			if bCount == 0 {
				bStart = op.bLine
			}
			bCount++
		}
	}
	if aCount == 0 {
		aStart = ops[0].aLine - 1
	}
	if bCount == 0 {
		bStart = ops[0].bLine - 1
	}
	fmt.Fprintf(out, "@@ -%d,%d +%d,%d @@\n", aStart, aCount, bStart, bCount)
	for _, op := range ops {
		out.WriteByte(op.kind)
		out.WriteString(op.line)
		if !strings.HasSuffix(op.line, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// maxEdits bounds the search for a shortest diff; past it, the files are
// shown as wholly replaced. It keeps time (O((N+M)·D)) and memory (O(D²))
// small.
const maxEdits = 1000

// diffLines computes a shortest edit script with Myers' algorithm: fast for
// config files even when they are long, since few of their lines change.
func diffLines(a, b []string) []diffOp {
	n, m := len(a), len(b)
	maxD := n + m
	v := make([]int, 2*maxD+2)
	var trace [][]int
	for d := 0; d <= min(maxD, maxEdits); d++ {
		// Keep v for diagonals -d..d only: what backtrack reads of step d.
		trace = append(trace, append([]int(nil), v[maxD-d:maxD+d+1]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[maxD+k-1] < v[maxD+k+1] {
				x = v[maxD+k+1] // down: insert from b
			} else {
				x = v[maxD+k-1] + 1 // right: delete from a
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[maxD+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace, d)
			}
		}
	}
	var ops []diffOp
	for i, line := range a {
		ops = append(ops, diffOp{'-', line, i + 1, 1})
	}
	for i, line := range b {
		ops = append(ops, diffOp{'+', line, n + 1, i + 1})
	}
	return ops
}

func backtrack(a, b []string, trace [][]int, d int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for ; d > 0; d-- {
		v := trace[d] // diagonal k is at v[k+d]
		k := x - y
		var prevK int
		if k == -d || k != d && v[k-1+d] < v[k+1+d] {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[prevK+d]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			rev = append(rev, diffOp{' ', a[x], x + 1, y + 1})
		}
		if x == prevX {
			y--
			rev = append(rev, diffOp{'+', b[y], x + 1, y + 1})
		} else {
			x--
			rev = append(rev, diffOp{'-', a[x], x + 1, y + 1})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, diffOp{' ', a[x], x + 1, y + 1})
	}
	ops := make([]diffOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}
