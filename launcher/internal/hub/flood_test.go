package hub

import (
	"fmt"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// TestHubNotificationFlood (hardening issue: a notification flood
// disconnects a client that reads): a server sends some 12,000 log
// messages, at about 10,000 a second, to a client of connect NAME that
// reads at a normal pace, slower than that, and nothing at all for the
// first 3,000. The client stays connected and gets the answer to every
// call.
func TestHubNotificationFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood test: run without -short")
	}
	for _, kind := range connKinds {
		t.Run(kind.name, func(t *testing.T) {
			logs := &testserver.Logs{}
			h, srv := newFakeHubLog(t, logs.Logger())
			ours, theirs := kind.pair(t)
			serve(t, h, theirs)
			r := initializeOnly(t, ours, "reader")

			const calls = 10
			var ids []mcp.ID
			var tokens []string
			for i := range calls {
				writeLine(t, ours, fmt.Sprintf(`{"jsonrpc":"2.0","id":"c%d","method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":"p%d"}}}`, i, i))
				m := srv.recv()
				var p struct {
					Meta struct {
						Token json.RawMessage `json:"progressToken"`
					} `json:"_meta"`
				}
				if err := json.Unmarshal(m.Params, &p); err != nil || len(p.Meta.Token) == 0 {
					t.Fatalf("the server got %s, want a call with a progress token", m.AppendJSON(nil))
				}
				ids = append(ids, m.ID)
				tokens = append(tokens, string(p.Meta.Token))
			}
			first, rest, sent := testserver.FloodScript(ids, tokens)
			if err := testserver.Paced(srv.stdout, first); err != nil { // the client reads nothing yet
				t.Fatal(err)
			}
			wrote := make(chan error, 1)
			go func() { wrote <- testserver.Paced(srv.stdout, rest) }() // ends with the script, or the test (the output closes)
			seen := testserver.ReadFlood(t, r)
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}

			sent.CheckAnswers(t, seen)
			if got := h.Clients(); len(got) != 1 {
				t.Errorf("clients after the flood: got %v, want the reader", got)
			}
			writeLine(t, ours, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
			if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"after"`) {
				t.Errorf("a ping after the flood: got %q, %v", line, err)
			}
			// Every notification went out or is counted as lost; the
			// newest progress of each call went out.
			shed := h.Shed()
			t.Logf("sent %d log messages and %d progress; the client read %d and %d; %d dropped, %d coalesced",
				sent.Logs, sent.Progress, seen.Logs, seen.Progress, shed.Dropped, shed.Coalesced)
			checkShed(t, sent, seen, shed)
			for i := range calls {
				if got := seen.Last[fmt.Sprintf(`"p%d"`, i)]; got != sent.Last[i] {
					t.Errorf("the last progress of c%d: got %d, want %d (the newest)", i, got, sent.Last[i])
				}
			}
			// The log says so, with the counts: the first loss at once,
			// the rest when the client goes.
			const msg = "client reads the server's notifications too slowly: its log messages are dropped and its progress coalesced"
			if len(logs.Records(msg)) == 0 {
				t.Errorf("nothing logged of the losses")
			}
			ours.Close()
			for deadline := time.Now().Add(waitLong); len(h.Clients()) > 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			var logged Shed
			for _, r := range logs.Records(msg) {
				if r["server"] != "fake" || r["client"] != "reader 1" {
					t.Errorf("logged %v, want server fake, client reader 1", r)
				}
				d, _ := r["dropped"].(float64)
				c, _ := r["coalesced"].(float64)
				logged.Dropped += int64(d)
				logged.Coalesced += int64(c)
			}
			if logged != shed {
				t.Errorf("the log counts %+v lost once the client is gone, the hub %+v", logged, shed)
			}
		})
	}
}

// checkShed fails the test unless every notification of a flood went out
// or was counted as lost, and some were.
func checkShed(t *testing.T, sent testserver.Flood, seen testserver.FloodSeen, shed Shed) {
	t.Helper()
	if shed.Dropped == 0 {
		t.Errorf("nothing dropped for a client that read nothing of 3,000 log messages")
	}
	if got, want := int64(seen.Logs+seen.Progress)+shed.Dropped+shed.Coalesced, int64(sent.Logs+sent.Progress); got != want {
		t.Errorf("read (%d, %d) and lost (%+v): %d notifications, want the %d sent", seen.Logs, seen.Progress, shed, got, want)
	}
}
