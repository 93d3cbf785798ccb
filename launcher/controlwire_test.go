package launcher

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
)

// TestControlWire holds the client's hand-written side of the control
// protocol to the launcher's, which is go-json's: every request the client
// writes reads back as itself, and every answer the launcher writes parses
// back as itself.
func TestControlWire(t *testing.T) {
	odd := "quote \" backslash \\ newline \n tab \t <&> é \u2028 \x01"
	for _, req := range []controlRequest{
		{Op: "status"},
		{Op: "connect", Server: "files"},
		{Op: "connect", Server: "files", Stdio: true},
		{Op: "gateway", Servers: []string{"git", "files", odd}, Stdio: true},
		{Op: "stop", Force: true},
		{Op: odd, Server: odd},
	} {
		line := req.appendJSON(nil)
		var got controlRequest
		if err := json.Unmarshal(line, &got); err != nil {
			t.Errorf("%+v: the launcher cannot read %s: %v", req, line, err)
			continue
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("the launcher reads %s as %+v, want %+v", line, got, req)
		}
	}

	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	status := &ctl.Status{Workspace: "ws-1", Pid: 42, Manifest: "mcpgen.toml", StartedAt: at,
		Reload:  ctl.ReloadStatus{At: &at, OK: true},
		Servers: []ctl.ServerStatus{{Name: "files"}, {Name: odd}}}
	for _, a := range []controlAnswer{
		{},
		{OK: true},
		{OK: true, Stdio: true},
		{Error: odd},
		{Error: "workspace \"ws\": exiting", Exiting: true},
		{OK: true, Status: status},
		{OK: true, Status: status, Starting: []string{"git", odd}},
	} {
		var line bytes.Buffer
		if err := answer(&line, a); err != nil {
			t.Fatal(err)
		}
		got, err := parseAnswer(bytes.TrimSuffix(line.Bytes(), []byte("\n")))
		if err != nil {
			t.Errorf("the client cannot read %s: %v", line.Bytes(), err)
			continue
		}
		var again bytes.Buffer
		if err := answer(&again, *got); err != nil {
			t.Fatal(err)
		}
		if again.String() != line.String() {
			t.Errorf("the client reads %s as an answer that writes\n%s", line.Bytes(), again.Bytes())
		}
	}
}

// TestParseAnswer: what is not an answer is an error; null and members it
// does not know leave the answer as it is.
func TestParseAnswer(t *testing.T) {
	for _, tt := range []struct {
		line    string
		want    controlAnswer
		wantErr string
	}{
		{`{"ok":true,"stdio":false,"error":null,"status":null,"extra":{"a":[1]}}`, controlAnswer{OK: true}, ""},
		{` {"error":"no \"x\"\n","exiting":true} `, controlAnswer{Error: "no \"x\"\n", Exiting: true}, ""},
		{`{"starting":["a","b"]}`, controlAnswer{Starting: []string{"a", "b"}}, ""},
		{`{"ok":true}x`, controlAnswer{}, "not a JSON object"},
		{`[]`, controlAnswer{}, "not a JSON object"},
		{``, controlAnswer{}, "not a JSON object"},
		{`{"ok":"yes"}`, controlAnswer{}, `"ok" is not`},
		{`{"error":1}`, controlAnswer{}, `"error" is not`},
		{`{"status":[]}`, controlAnswer{}, `"status" is not`},
		{`{"starting":"a"}`, controlAnswer{}, `"starting" is not`},
	} {
		got, err := parseAnswer([]byte(tt.line))
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseAnswer(%s): error %v, want one that says %q", tt.line, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("parseAnswer(%s): %v", tt.line, err)
		case !reflect.DeepEqual(*got, tt.want):
			t.Errorf("parseAnswer(%s) = %+v, want %+v", tt.line, *got, tt.want)
		}
	}
}
