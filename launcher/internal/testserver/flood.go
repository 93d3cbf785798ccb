package testserver

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// The notification flood of the hardening issue: a server sends log
// messages by the thousand, at about 10,000 a second, and progress, while
// a client's calls are under way; the client reads at a normal pace, slower
// than that. The hub's and the gateway's tests play it with a server of
// their own (the test writes its output), so that the flood's first part
// can go out while the client reads nothing.

// A Flood is what a flood's server sends.
type Flood struct {
	Logs     int   // notifications/message
	Progress int   // notifications/progress
	Last     []int // the last progress sent for each call
	Calls    int
}

// FloodEnd ends a flood: a notification that may not be lost.
const FloodEnd = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///end"}}`

// FloodScript is the server's output of a flood. calls are the server's
// ids of the client's calls (its tools/call, for which the answer is
// "answer N"), and tokens the progress tokens the server was given for
// them. First is 3,000 log messages of about 200 bytes; rest is 9,000
// more, with each call's progress (one every 20 lines, a call after the
// other) and then its answer among them, and FloodEnd.
func FloodScript(calls []mcp.ID, tokens []string) (first, rest []string, f Flood) {
	f.Last, f.Calls = make([]int, len(calls)), len(calls)
	line := func() string {
		f.Logs++
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"noisy","data":"line %06d %s"}}`, f.Logs, strings.Repeat("x", 100))
	}
	for range 3000 {
		first = append(first, line())
	}
	const n = 9000
	window := n / len(calls) // lines of each call's progress
	for i := range n {
		rest = append(rest, line())
		k := i / window
		if k >= len(calls) {
			continue
		}
		if i%20 == 0 {
			f.Progress++
			f.Last[k]++
			rest = append(rest, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d}}`, tokens[k], f.Last[k]))
		}
		if i%window == window-1 {
			rest = append(rest, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"answer %d"}]}}`, calls[k], k))
		}
	}
	return first, append(rest, FloodEnd), f
}

// Paced writes lines at about 10,000 a second: 100 every 10 ms.
func Paced(w io.Writer, lines []string) error {
	for i := 0; i < len(lines); i += 100 {
		var b strings.Builder
		for _, l := range lines[i:min(i+100, len(lines))] {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return fmt.Errorf("the server's output: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// FloodSeen is what a client read of a flood.
type FloodSeen struct {
	Logs, Progress int
	Last           map[string]int    // the last progress, by the client's token as it was written
	Answers        map[string]string // results, by id as written
}

// ReadFlood reads what the client gets until FloodEnd, at the pace of a
// client that does something with what it reads: a pause of a millisecond
// every 5 lines, some 4,000 lines a second at most, less than a flood's
// server sends. It fails the test if the connection ends first, if an
// answer comes twice, or if progress goes back.
func ReadFlood(t testing.TB, r *bufio.Reader) FloodSeen {
	t.Helper()
	seen := FloodSeen{Last: map[string]int{}, Answers: map[string]string{}}
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the client, after %d lines of the flood (%d answers): %v", n-1, len(seen.Answers), err)
		}
		m, err := mcp.DecodeMessage(line)
		if err != nil {
			t.Fatalf("the client got %q: %v", line, err)
		}
		switch {
		case m.IsResponse():
			if _, dup := seen.Answers[m.ID.String()]; dup {
				t.Fatalf("answered twice: %s", line)
			}
			seen.Answers[m.ID.String()] = string(m.Result)
		case m.Method == "notifications/message":
			seen.Logs++
		case m.Method == "notifications/progress":
			var p struct {
				Token    json.RawMessage `json:"progressToken"`
				Progress int             `json:"progress"`
			}
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatalf("progress %s: %v", m.Params, err)
			}
			if last := seen.Last[string(p.Token)]; p.Progress <= last {
				t.Fatalf("progress %s after %d: it goes back", m.Params, last)
			}
			seen.Progress++
			seen.Last[string(p.Token)] = p.Progress
		case m.Method == "notifications/resources/updated":
			return seen
		}
		if n%5 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// CheckAnswers fails the test unless every call of the flood got its
// answer, once: "answer N" to the client's id "cN".
func (f Flood) CheckAnswers(t testing.TB, seen FloodSeen) {
	t.Helper()
	if len(seen.Answers) != f.Calls {
		t.Errorf("answers: got %d, want %d", len(seen.Answers), f.Calls)
	}
	for i := range f.Calls {
		id := fmt.Sprintf(`"c%d"`, i)
		if want := fmt.Sprintf(`{"content":[{"type":"text","text":"answer %d"}]}`, i); seen.Answers[id] != want {
			t.Errorf("answer to %s: got %s, want %s", id, seen.Answers[id], want)
		}
	}
}
