package wire_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/wire"
)

// answer is an answer as the launcher writes it and its client reads it.
type answer = wire.Answer[ctl.Status]

// TestControlWire holds the client's hand-written side of the control
// protocol to the launcher's, which is go-json's: every request the client
// writes reads back as itself, and every answer the launcher writes parses
// back as itself.
func TestControlWire(t *testing.T) {
	odd := "quote \" backslash \\ newline \n tab \t <&> é \u2028 \x01"
	for _, req := range []wire.Request{
		{Op: "status"},
		{Op: "connect", Server: "files"},
		{Op: "connect", Server: "files", Stdio: true},
		{Op: "gateway", Servers: []string{"git", "files", odd}, Tools: "search", Stdio: true},
		{Op: "stop", Force: true},
		{Op: odd, Server: odd},
	} {
		line := req.AppendJSON(nil)
		var got wire.Request
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
	for _, a := range []answer{
		{},
		{OK: true},
		{OK: true, Stdio: true},
		{Error: odd},
		{Error: "workspace \"ws\": exiting", Exiting: true},
		{OK: true, Status: status},
		{OK: true, Status: status, Starting: []string{"git", odd}},
	} {
		var line bytes.Buffer
		if err := wire.WriteAnswer(&line, a); err != nil {
			t.Fatal(err)
		}
		got, err := wire.ParseAnswer[ctl.Status](bytes.TrimSuffix(line.Bytes(), []byte("\n")))
		if err != nil {
			t.Errorf("the client cannot read %s: %v", line.Bytes(), err)
			continue
		}
		var again bytes.Buffer
		if err := wire.WriteAnswer(&again, *got); err != nil {
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
		want    answer
		wantErr string
	}{
		{`{"ok":true,"stdio":false,"error":null,"status":null,"extra":{"a":[1]}}`, answer{OK: true}, ""},
		{` {"error":"no \"x\"\n","exiting":true} `, answer{Error: "no \"x\"\n", Exiting: true}, ""},
		{`{"starting":["a","b"]}`, answer{Starting: []string{"a", "b"}}, ""},
		{`{"ok":true}x`, answer{}, "not a JSON object"},
		{`[]`, answer{}, "not a JSON object"},
		{``, answer{}, "not a JSON object"},
		{`{"ok":"yes"}`, answer{}, `"ok" is not`},
		{`{"error":1}`, answer{}, `"error" is not`},
		{`{"status":[]}`, answer{}, `"status" is not`},
		{`{"starting":"a"}`, answer{}, `"starting" is not`},
	} {
		got, err := wire.ParseAnswer[ctl.Status]([]byte(tt.line))
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseAnswer(%s): error %v, want one that says %q", tt.line, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("ParseAnswer(%s): %v", tt.line, err)
		case !reflect.DeepEqual(*got, tt.want):
			t.Errorf("ParseAnswer(%s) = %+v, want %+v", tt.line, *got, tt.want)
		}
	}
}
