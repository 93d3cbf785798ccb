package streamable

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the modern binding of Streamable HTTP (revision 2026-07-28):
// which messages go its way, the headers that mirror their bodies, the
// exchange of a modern request (no session, no resumption), and what the
// answers tell of the server's era.
//
// Which way a message goes. Options.Protocol may pin an era; else (auto)
// the transport follows the client, which finds the server's era as the
// spec's HTTP binding says (mcp.Client.Open: a modern request first,
// server/discover; a 400 whose body is a modern error means a modern
// server; any other answer, initialize and the legacy era): a request
// whose _meta names a modern revision is sent the modern way, initialize
// and notifications/initialized the legacy way. What the answers show is
// kept for the transport's life: a successful initialize makes the session
// legacy (every later message goes the legacy way, session id and all); a
// discover result, or an error only a modern server sends, makes it modern
// (every later message goes the modern way, _meta or not).

// parseProtocol reads Options.Protocol: the era it pins (EraUnknown for
// auto) and the revision.
func parseProtocol(p string) (mcp.Era, string, error) {
	if p == "" || p == "auto" {
		return mcp.EraUnknown, "", nil
	}
	era := mcp.VersionEra(p)
	if era == mcp.EraUnknown {
		return mcp.EraUnknown, "", fmt.Errorf("protocol %q: want auto or a revision mcpgen speaks (%s)", p, strings.Join(mcp.AllVersions(), ", "))
	}
	return era, p, nil
}

// ownHeader reports whether the transport sets the header (its canonical
// name) itself, in either era.
func ownHeader(name string) bool {
	switch name {
	case "Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id", "Mcp-Method", "Mcp-Name":
		return true
	}
	return strings.HasPrefix(name, "Mcp-Param-")
}

// Era returns the era the transport speaks: the one Options.Protocol pins,
// else the one its traffic showed (EraUnknown until the server answered
// initialize, or a modern request as only a modern server does).
func (t *Transport) Era() mcp.Era {
	if t.pinned != mcp.EraUnknown {
		return t.pinned
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.era
}

// SpeaksModern reports whether the transport can carry the modern binding
// (all but one pinned to a legacy revision can): the launcher lets its
// client find a url server's era only over a transport that does.
func (t *Transport) SpeaksModern() bool { return t.pinned != mcp.EraLegacy }

// modernEra reports whether every message now goes the modern way: the
// era is pinned modern, or the server showed it is modern.
func (t *Transport) modernEra() bool {
	return t.Era() == mcp.EraModern
}

// modernRequest says whether a request goes the modern way, and the
// revision its MCP-Protocol-Version header names: the one its _meta names,
// which the header must match, else the session's.
func (t *Transport) modernRequest(msg *mcp.Message) (modern bool, version string) {
	era := t.Era()
	if era == mcp.EraLegacy || (era == mcp.EraUnknown && (msg.Method == "initialize" || msg.Method == "notifications/initialized")) {
		return false, "" // a legacy session, or the legacy handshake
	}
	meta, err := mcp.ParseRequestMeta(msg.Params)
	if err != nil {
		meta = mcp.RequestMeta{} // the server will say what is wrong with it
	}
	switch {
	case era == mcp.EraModern:
	case !meta.Modern() || mcp.VersionEra(meta.ProtocolVersion) == mcp.EraLegacy:
		return false, ""
	}
	if meta.ProtocolVersion != "" {
		return true, meta.ProtocolVersion
	}
	return true, t.modernVersion()
}

// modernVersion is the revision of a modern message whose body names none.
func (t *Transport) modernVersion() string {
	if t.pinned == mcp.EraModern {
		return t.pinnedVersion
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.modernV != "" {
		return t.modernV
	}
	return mcp.ModernVersion
}

// settleModern notes that the server answered a request at version as
// only a modern server does.
func (t *Transport) settleModern(version string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.era == mcp.EraUnknown {
		t.era, t.modernV = mcp.EraModern, version
	}
}

// requestHeaders are what the modern binding mirrors of a message's body
// into headers: its revision, its method and the name it acts on
// (tools/call, prompts/get: params.name; resources/read: params.uri).
// The Mcp-Param headers of a tool call come later (see params.go).
func requestHeaders(msg *mcp.Message, version string) (http.Header, error) {
	return targetHeaders(msg.Method, version, readTarget(msg))
}

// A target is what a request acts on, as its params say: the name (or
// URI) of what it names, and a tool call's arguments.
type target struct {
	name  string
	named bool
	args  json.RawMessage
}

// readTarget reads a request's target, for the methods that have one.
func readTarget(msg *mcp.Message) target {
	field := ""
	switch msg.Method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	default:
		return target{}
	}
	var p struct {
		Name      json.RawMessage `json:"name"`
		URI       json.RawMessage `json:"uri"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(msg.Params, &p) != nil {
		return target{}
	}
	raw := p.Name
	if field == "uri" {
		raw = p.URI
	}
	tg := target{args: p.Arguments}
	tg.named = raw != nil && json.Unmarshal(raw, &tg.name) == nil
	return tg
}

// targetHeaders are the headers of a request of method at version, which
// acts on tg.
func targetHeaders(method, version string, tg target) (http.Header, error) {
	if !plainHeaderValue(version) || version == "" {
		return nil, fmt.Errorf("the protocol version %q of the request's _meta cannot be sent as a header", version)
	}
	if !plainHeaderValue(method) {
		return nil, fmt.Errorf("the method %q cannot be sent as a header", method)
	}
	h := make(http.Header, 4)
	h.Set("Mcp-Protocol-Version", version)
	h.Set("Mcp-Method", method)
	if tg.named {
		h.Set("Mcp-Name", headerValue(tg.name))
	}
	return h, nil
}

// headerValue is s as a header value of the modern binding: as it is when
// it is plain visible ASCII (spaces inside), else in the spec's Base64
// form, =?base64?...?=, as is a value that looks like that form.
func headerValue(s string) string {
	if plainHeaderValue(s) && !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")) {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// plainHeaderValue reports whether s can go in a header as it is: visible
// ASCII and inner spaces only.
func plainHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return s == "" || (s[0] != ' ' && s[len(s)-1] != ' ')
}

// exchangeModern POSTs a modern request and delivers its answer, or an
// error response when there is none to be had. Nothing is resumed: a
// stream that breaks before the response fails the request, which the
// client may send again under a new id. subscriptions/listen, the one
// request that lasts, has no time bound but the client's.
func (t *Transport) exchangeModern(ctx context.Context, p *pending, msg *mcp.Message, body []byte, wrote func()) {
	if t.requestTimeout > 0 && p.method != "subscriptions/listen" {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, t.requestTimeout, errTimedOut)
		defer stop()
	}
	tg := readTarget(msg)
	h, err := targetHeaders(p.method, p.version, tg)
	if err != nil {
		wrote()
		t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: %v", t.where, err))
		return
	}
	var call *toolCall
	if p.method == "tools/call" {
		call = &toolCall{t: t, name: tg.name, args: tg.args, version: p.version, params: msg.Params}
		if werr := call.headers(ctx, wrote, h); werr != nil {
			wrote()
			t.answerWith(p, werr)
			return
		}
	}
	for {
		resp, _, err := t.do(ctx, http.MethodPost, body, false, "", wrote, h)
		if err != nil {
			t.unanswered(ctx, p, "POST", err)
			return
		}
		status := resp.StatusCode
		switch {
		case status < 200 || status > 299:
			werr, detail := readHTTPError(resp)
			if call != nil && werr != nil && werr.Code == mcp.CodeHeaderMismatch && call.retry(ctx, h) {
				// The spec's advice: the tool may have changed; list the
				// tools again, and send the call once more.
				t.log.Debug("streamable: the server found the call's headers wanting; sending it again after listing the tools", "url", t.where, "tool", call.name, "error", werr.Message)
				continue
			}
			t.answerModernHTTPError(p, resp.Status, resp.StatusCode, werr, detail)
			return
		case status == http.StatusAccepted:
			discard(resp.Body)
			t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: the server accepted the request (202) without answering it", t.where))
			return
		}
		// A modern server hands out no session: an Mcp-Session-Id header
		// here is ignored, as the spec asks.
		t.readAnswer(ctx, p, resp, t.readModernStream)
		return
	}
}

// readModernStream delivers the messages of a modern request's event
// stream until its response. A stream that ends or breaks before fails
// the request: the modern binding has no Last-Event-ID.
func (t *Transport) readModernStream(ctx context.Context, p *pending, body io.ReadCloser) {
	sse := newSSEReader(body, t.maxMsg)
	_, err := t.events(sse, p)
	if err == nil && !t.isPending(p) {
		// Answered. Reading the rest, for a moment at most, lets the next
		// request reuse the connection; nothing after the response
		// concerns the request.
		timer := time.AfterFunc(drainGrace, func() { body.Close() })
		_, _ = io.Copy(io.Discard, io.LimitReader(body, int64(t.maxMsg)))
		timer.Stop()
	}
	body.Close()
	switch {
	case !t.isPending(p) || ctx.Err() != nil:
		t.unanswered(ctx, p, "POST", ctx.Err())
		return
	case errors.Is(err, errEventTooLarge):
		t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: an event of the answer is longer than %d bytes", t.where, t.maxMsg))
		return
	}
	how := "ended"
	if err != nil && !errors.Is(err, io.EOF) {
		how = fmt.Sprintf("broke (%v)", err)
	}
	again := "the request may be sent again, under a new id"
	if p.method == "subscriptions/listen" {
		again = "send subscriptions/listen again to go on hearing of changes"
	}
	t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: the answer's event stream %s before the response, and the %s revision does not resume streams: %s",
		t.where, how, p.version, again))
}

// readHTTPError reads an HTTP error's body: the JSON-RPC error it holds,
// if it holds one, else a snippet of it.
func readHTTPError(resp *http.Response) (*mcp.Error, string) {
	body := readSome(resp.Body, maxErrorBody)
	discard(resp.Body)
	if m, err := mcp.DecodeMessage(bytes.TrimSpace(body)); err == nil && m.Error != nil {
		return m.Error, ""
	}
	return nil, snippet(body)
}

// answerModernHTTPError answers a modern request that the server refused
// with an HTTP error. The server's JSON-RPC error is kept whole (its code
// and data: a client finding the server's era reads them, and falls back
// to initialize on any error that is not a modern one); without one, the
// error is the transport's, which is not modern.
func (t *Transport) answerModernHTTPError(p *pending, status string, code int, werr *mcp.Error, detail string) {
	msg := fmt.Sprintf("POST %s: %s", t.where, status)
	if werr != nil {
		if werr.IsModern() {
			t.settleModern(p.version)
		}
		t.answerWith(p, &mcp.Error{Code: werr.Code, Message: msg + ": " + werr.Message, Data: werr.Data})
		return
	}
	if detail != "" {
		msg += ": " + detail
	}
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += " (check the bearer token and headers)"
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		msg += " (check the URL: it must name the server's MCP endpoint, often ending in /mcp)"
	}
	t.answerError(p, CodeTransportError, msg)
}

// modernResponse handles the response to a modern request before the
// reader has it: a discover result, or an error only a modern server
// sends, settles the era; a tools/list result loses the tools whose
// x-mcp-header annotations are invalid (see params.go). It returns the
// line to deliver.
func (t *Transport) modernResponse(p *pending, msg *mcp.Message, line []byte) []byte {
	switch {
	case msg.Error != nil:
		if msg.Error.IsModern() {
			t.settleModern(p.version)
		}
	case p.method == "server/discover":
		if _, err := mcp.ParseDiscoverResult(msg.Result); err == nil {
			t.settleModern(p.version)
		}
	case p.method == "tools/list":
		if result, changed := t.filterTools(msg.Result); changed {
			return (&mcp.Message{ID: msg.ID, Result: result}).AppendJSON(nil)
		}
	}
	return line
}

// cancelModern ends the exchange of a modern request that the client
// cancelled (notifications/cancelled names it): over HTTP, closing its
// stream is the modern revision's cancellation, and the notification is
// not sent. It reports whether the notification is done with: the request
// was modern, or is gone and the session is.
func (t *Transport) cancelModern(id mcp.ID) bool {
	t.mu.Lock()
	p := t.inflight[id]
	if p != nil && p.modern {
		delete(t.inflight, id)
	}
	t.mu.Unlock()
	switch {
	case p == nil:
		return t.modernEra()
	case !p.modern:
		return false
	}
	p.cancel(errCancelled)
	return true
}

// oneWayModern sends a notification the modern way (the revision defines
// none from client to server over HTTP, but the binding says how one
// goes), and drops a response: a modern server asks nothing of the client
// but through input_required results.
func (t *Transport) oneWayModern(msg *mcp.Message, body []byte) {
	if !msg.IsNotification() {
		t.log.Warn("streamable: not sending a response to a modern server, which sends no requests", "url", t.where, "id", msg.ID.String())
		return
	}
	h, err := requestHeaders(msg, t.modernVersion())
	if err != nil {
		t.log.Warn("streamable: not sending a notification", "url", t.where, "error", err)
		return
	}
	t.oneWay(msg.Method, body, h)
}
