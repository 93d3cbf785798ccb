package mcp

import (
	"errors"
	"slices"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

func TestParseRequestMeta(t *testing.T) {
	tests := []struct {
		params  string
		want    RequestMeta
		wantErr string
	}{
		{``, RequestMeta{}, ""},
		{`null`, RequestMeta{}, ""},
		{`{}`, RequestMeta{}, ""},
		{`{"name":"x"}`, RequestMeta{}, ""},
		{`[1]`, RequestMeta{}, "invalid params: params must be an object"},
		{`{"_meta":{"progressToken":7}}`, RequestMeta{ProgressToken: json.RawMessage(`7`)}, ""},
		{`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"debug","traceparent":"00-ab-cd-01","tracestate":"k=v","other":[1]}}`,
			RequestMeta{ProtocolVersion: "2026-07-28", ClientCapabilities: json.RawMessage(`{"elicitation":{}}`), ClientInfo: json.RawMessage(`{"name":"c","version":"1"}`), LogLevel: "debug", Traceparent: "00-ab-cd-01", Tracestate: "k=v"}, ""},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}`, RequestMeta{ProtocolVersion: "2026-07-28"}, ""},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}`, RequestMeta{}, `invalid params: _meta["io.modelcontextprotocol/protocolVersion"] must be a string`},
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":[]}}`, RequestMeta{}, `invalid params: _meta["io.modelcontextprotocol/clientCapabilities"] must be an object`},
		{`{"_meta":[]}`, RequestMeta{}, "invalid params: _meta must be an object"},
		{`{"_meta":{"traceparent":null}}`, RequestMeta{}, `invalid params: _meta["traceparent"] must be a string`},
	}
	for _, tt := range tests {
		got, err := ParseRequestMeta(json.RawMessage(tt.params))
		errText := ""
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidParams {
				t.Errorf("%s: error %v is not -32602", tt.params, err)
			} else {
				errText = e.Message
			}
		}
		if errText != tt.wantErr {
			t.Errorf("%s: error %q, want %q", tt.params, errText, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got.ProtocolVersion != tt.want.ProtocolVersion || string(got.ClientCapabilities) != string(tt.want.ClientCapabilities) ||
			string(got.ClientInfo) != string(tt.want.ClientInfo) || got.LogLevel != tt.want.LogLevel ||
			string(got.ProgressToken) != string(tt.want.ProgressToken) || got.Traceparent != tt.want.Traceparent || got.Tracestate != tt.want.Tracestate {
			t.Errorf("%s: got %+v, want %+v", tt.params, got, tt.want)
		}
		if got.Modern() != (tt.want.ProtocolVersion != "") {
			t.Errorf("%s: Modern() = %v", tt.params, got.Modern())
		}
	}
}

func TestCheckModernRequest(t *testing.T) {
	ok := RequestMeta{ProtocolVersion: ModernVersion, ClientCapabilities: json.RawMessage(`{}`)}
	if err := CheckModernRequest(&ok, ModernVersions); err != nil {
		t.Errorf("a good request: %v", err)
	}
	old := RequestMeta{ProtocolVersion: "1900-01-01", ClientCapabilities: json.RawMessage(`{}`)}
	err := CheckModernRequest(&old, AllVersions())
	if err == nil || err.Code != -32022 {
		t.Fatalf("an unknown version: got %v, want -32022", err)
	}
	if got, ok := err.SupportedVersions(); !ok || !slices.Equal(got, AllVersions()) {
		t.Errorf("supported: got %q (%v), want %q", got, ok, AllVersions())
	}
	if !err.IsModern() {
		t.Errorf("-32022 is a modern error")
	}
	noCaps := RequestMeta{ProtocolVersion: ModernVersion}
	if err := CheckModernRequest(&noCaps, ModernVersions); err == nil || err.Code != CodeInvalidParams {
		t.Errorf("no capabilities: got %v, want -32602", err)
	}
	for _, e := range []*Error{ErrMethodNotFound, ErrInvalidParams, NewError(-32000, "x"), NewError(-32019, "x"), nil} {
		if e.IsModern() {
			t.Errorf("%v taken for a modern error", e)
		}
	}
}

func TestSetMeta(t *testing.T) {
	v := json.RawMessage(`"2026-07-28"`)
	tests := []struct {
		params string
		set    []ObjectMember
		want   string
	}{
		{``, []ObjectMember{{MetaProtocolVersion, v}}, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`},
		{`{"name":"x"}`, []ObjectMember{{MetaProtocolVersion, v}}, `{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`},
		{`{ "_meta" : {"progressToken":1}, "name":"x" }`, []ObjectMember{{MetaProtocolVersion, v}}, `{"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"x"}`},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"x","progressToken":1}}`, []ObjectMember{{MetaProtocolVersion, v}}, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":1}}`},
		{`{"_meta":{"progressToken":1,"traceparent":"t"}}`, []ObjectMember{{MetaProgressToken, nil}}, `{"_meta":{"traceparent":"t"}}`},
		{`{"a":"\u00e9"}`, []ObjectMember{{MetaLogLevel, json.RawMessage(`"info"`)}}, `{"a":"\u00e9","_meta":{"io.modelcontextprotocol/logLevel":"info"}}`},
	}
	for _, tt := range tests {
		got, err := SetMeta(json.RawMessage(tt.params), tt.set...)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %s (%v), want %s", tt.params, got, err, tt.want)
		}
	}
	if _, err := SetMeta(json.RawMessage(`[1]`), ObjectMember{MetaLogLevel, v}); err == nil {
		t.Errorf("params that are an array: no error")
	}
}

func TestResultType(t *testing.T) {
	for result, want := range map[string]string{
		`{}`:                                    ResultComplete,
		`{"content":[]}`:                        ResultComplete,
		`{"resultType":"complete"}`:             ResultComplete,
		`{"resultType":"input_required"}`:       ResultInputRequired,
		`{"x":{"resultType":"input_required"}}`: ResultComplete,
		`{"resultType":7}`:                      ResultComplete,
		`not json`:                              ResultComplete,
	} {
		if got := ResultType(json.RawMessage(result)); got != want {
			t.Errorf("%s: got %q, want %q", result, got, want)
		}
	}
}

func TestInputRequired(t *testing.T) {
	in := `{"resultType":"input_required","inputRequests":{"b":{"method":"elicitation/create","params":{"message":"who?"}},"a":{"method":"roots/list"}},"requestState":"s1"}`
	r, err := ParseInputRequired(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Keys, []string{"b", "a"}) || r.InputRequests["b"].Method != "elicitation/create" || string(r.InputRequests["b"].Params) != `{"message":"who?"}` || !r.HasState || r.RequestState != "s1" {
		t.Errorf("got %+v", r)
	}
	out, err := r.MarshalJSON()
	if err != nil || string(out) != in {
		t.Errorf("round trip: got %s (%v), want %s", out, err, in)
	}
	for _, bad := range []string{
		`{"resultType":"input_required"}`,
		`{"resultType":"input_required","inputRequests":{"a":{"params":{}}}}`,
		`{"resultType":"input_required","inputRequests":[]}`,
		`{"resultType":"input_required","requestState":1}`,
	} {
		if _, err := ParseInputRequired(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	onlyState, err := ParseInputRequired(json.RawMessage(`{"resultType":"input_required","requestState":""}`))
	if err != nil || !onlyState.HasState {
		t.Errorf("a state alone, empty: got %+v (%v)", onlyState, err)
	}
}

func TestRetryParams(t *testing.T) {
	resp, state, hasState, ok, err := RetryParams(json.RawMessage(`{"name":"t","inputResponses":{"a":{"action":"accept"}},"requestState":"s"}`))
	if err != nil || !ok || !hasState || state != "s" || string(resp["a"]) != `{"action":"accept"}` {
		t.Errorf("got %v %q %v %v %v", resp, state, hasState, ok, err)
	}
	if _, _, _, ok, err := RetryParams(json.RawMessage(`{"name":"t"}`)); ok || err != nil {
		t.Errorf("a first request: got ok %v, err %v", ok, err)
	}
	if _, _, _, _, err := RetryParams(json.RawMessage(`{"inputResponses":[]}`)); err == nil {
		t.Errorf("inputResponses an array: no error")
	}
}

func TestCompleteResult(t *testing.T) {
	info := json.RawMessage(`{"name":"s","version":"1"}`)
	tests := []struct{ in, want string }{
		{`{}`, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`},
		{`{"content":[],"_meta":{"x":1}}`, `{"content":[],"_meta":{"x":1,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"resultType":"complete"}`},
		{`{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t"}}}`, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t"}}}`},
		{`{"content":[{"type":"text","text":"hi"}]}`, `{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`},
		{` { } `, `{ "resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`},
		{`{"content":[{"type":"text","text":"\"_meta\""}]}`, `{"content":[{"type":"text","text":"\"_meta\""}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`},
	}
	for _, tt := range tests {
		got, err := CompleteResult(json.RawMessage(tt.in), info)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %s (%v), want %s", tt.in, got, err, tt.want)
		}
	}
	got, err := Cacheable(json.RawMessage(`{"tools":[],"ttlMs":5}`), 0, CachePrivate)
	if err != nil || string(got) != `{"tools":[],"ttlMs":0,"cacheScope":"private"}` {
		t.Errorf("Cacheable: got %s (%v)", got, err)
	}
}

func TestDiscoverResult(t *testing.T) {
	raw := `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"instructions":"hi","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"}},"ttlMs":0,"cacheScope":"public"}`
	d, err := ParseDiscoverResult(json.RawMessage(raw))
	if err != nil || !slices.Equal(d.SupportedVersions, []string{"2026-07-28"}) || string(d.Capabilities) != `{"tools":{}}` || d.Instructions != "hi" || d.ServerInfo.Name != "s" || string(d.Raw) != raw {
		t.Errorf("got %+v (%v)", d, err)
	}
	if _, err := ParseDiscoverResult(json.RawMessage(`{"capabilities":{}}`)); err == nil {
		t.Errorf("no supportedVersions: no error")
	}
}

func TestChooseVersion(t *testing.T) {
	tests := []struct {
		theirs []string
		era    Era
		want   string
	}{
		{[]string{"2026-07-28", "2025-11-25"}, EraUnknown, "2026-07-28"},
		{[]string{"2026-07-28", "2025-11-25"}, EraLegacy, "2025-11-25"},
		{[]string{"2025-06-18"}, EraModern, ""},
		{[]string{"2099-01-01"}, EraUnknown, ""},
	}
	for _, tt := range tests {
		if got := ChooseVersion(tt.theirs, tt.era); got != tt.want {
			t.Errorf("%q in era %v: got %q, want %q", tt.theirs, tt.era, got, tt.want)
		}
	}
	if VersionEra("2026-07-28") != EraModern || VersionEra("2025-06-18") != EraLegacy || VersionEra("x") != EraUnknown {
		t.Errorf("VersionEra")
	}
	for _, e := range []Era{EraUnknown, EraLegacy, EraModern} {
		if got, ok := ParseEra(e.String()); !ok || got != e {
			t.Errorf("ParseEra(%q) = %v, %v", e, got, ok)
		}
	}
}

func BenchmarkParseRequestMeta(b *testing.B) {
	params := json.RawMessage(`{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":3}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequestMeta(params); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetMeta(b *testing.B) {
	params := json.RawMessage(`{"name":"echo","arguments":{"message":"hi"}}`)
	set := []ObjectMember{{MetaProtocolVersion, json.RawMessage(`"2026-07-28"`)}, {MetaClientCapabilities, json.RawMessage(`{}`)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SetMeta(params, set...); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMissingCapabilityError: the error names the capability in its data,
// as a ClientCapabilities object (requiredCapabilities), as the revision's
// schema has it, not only in its message.
func TestMissingCapabilityError(t *testing.T) {
	err := MissingCapabilityError("sampling")
	if err.Code != CodeMissingRequiredCapability || !strings.Contains(err.Message, "sampling") {
		t.Errorf("got %d %q", err.Code, err.Message)
	}
	if string(err.Data) != `{"requiredCapabilities":{"sampling":{}}}` {
		t.Errorf("data: got %s, want {\"requiredCapabilities\":{\"sampling\":{}}}", err.Data)
	}
}
