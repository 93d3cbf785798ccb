package launcher

import (
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/ctl"
)

// The client's side of the control protocol writes its request and reads
// the answer by hand, not through go-json, which compiles an encoder or a
// decoder for each type on its first use in a process: for one line each
// way, that cost mcpgen connect, which every agent starts once per server,
// more than the rest of its work. The launcher's side, which lives long,
// uses go-json; TestControlWire holds the two to agree.

// appendJSON appends r as one JSON object, as go-json writes it.
func (r controlRequest) appendJSON(b []byte) []byte {
	b = append(b, `{"op":`...)
	b = jsonwire.AppendString(b, r.Op)
	if r.Server != "" {
		b = append(b, `,"server":`...)
		b = jsonwire.AppendString(b, r.Server)
	}
	if len(r.Servers) > 0 {
		b = append(b, `,"servers":[`...)
		for i, s := range r.Servers {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwire.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if r.Force {
		b = append(b, `,"force":true`...)
	}
	if r.Stdio {
		b = append(b, `,"stdio":true`...)
	}
	return append(b, '}')
}

// parseAnswer reads an answer line, which must be one JSON object. Members
// it does not know are ignored, and null leaves a member unset, as go-json
// does; names match exactly, as the launcher writes them. The status, and
// the servers still starting, which only the requests that ask for them
// carry, go through go-json.
func parseAnswer(line []byte) (*controlAnswer, error) {
	if !jsonwire.IsObject(line) {
		return nil, fmt.Errorf("the answer is not a JSON object: %q", truncate(line, 200))
	}
	members, err := jsonwire.Members(line, 0)
	if err != nil {
		return nil, err // not after IsObject
	}
	var a controlAnswer
	for _, m := range members {
		if string(m.Value) == "null" {
			continue
		}
		var ok bool
		switch m.Key {
		case "ok":
			a.OK, ok = wireBool(m.Value)
		case "error":
			a.Error, ok = wireString(m.Value)
		case "stdio":
			a.Stdio, ok = wireBool(m.Value)
		case "exiting":
			a.Exiting, ok = wireBool(m.Value)
		case "status":
			a.Status = new(ctl.Status)
			ok = json.Unmarshal(m.Value, a.Status) == nil
		case "starting":
			ok = json.Unmarshal(m.Value, &a.Starting) == nil
		default:
			ok = true
		}
		if !ok {
			return nil, fmt.Errorf("the answer's %q is not what it should be: %s", m.Key, truncate(m.Value, 200))
		}
	}
	return &a, nil
}

func wireBool(v []byte) (b, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func wireString(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	return jsonwire.Unquote(v, true), true
}

// truncate shortens b for a message.
func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
