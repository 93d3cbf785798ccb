package streamable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"unicode"
)

// do sends one HTTP request to the endpoint with the transport's headers.
// A modern request carries the headers of the modern binding (modern: see
// requestHeaders) and nothing of a session. Else, unless fresh (an
// initialize), it carries the session id and the protocol version;
// sentSession says whether it carried a session id. wrote, if set, is
// called when the request has been written.
func (t *Transport) do(ctx context.Context, method string, body []byte, fresh bool, lastEventID string, wrote func(), modern http.Header) (resp *http.Response, sentSession bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	if wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote() },
		})
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		return nil, false, err
	}
	h := req.Header
	for k, v := range t.header {
		h[k] = v
	}
	if t.bearer != "" {
		h.Set("Authorization", "Bearer "+t.bearer)
	}
	switch method {
	case http.MethodPost:
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		h.Set("Accept", "text/event-stream")
	}
	if modern != nil {
		for k, v := range modern {
			h[k] = v
		}
	} else if !fresh {
		t.mu.Lock()
		session, version := t.session, t.version
		t.mu.Unlock()
		if session != "" {
			h.Set("Mcp-Session-Id", session)
			sentSession = true
		}
		if version != "" {
			h.Set("Mcp-Protocol-Version", version)
		}
	}
	if lastEventID != "" {
		h.Set("Last-Event-Id", lastEventID)
	}
	resp, err = t.client.Do(req)
	if wrote != nil {
		wrote()
	}
	if err != nil {
		// url.Error quotes the whole URL, query included: keep its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, sentSession, err
	}
	return resp, sentSession, nil
}

// checkRedirect follows a few redirects within the endpoint's origin that
// keep the method (307, 308: FastMCP's /mcp -> /mcp/), and no others: a
// redirect elsewhere would take the headers and the token along.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first, last := via[0], via[len(via)-1]
	switch {
	case len(via) >= 3:
		return errors.New("more than 3 redirects")
	case req.URL.Scheme != first.URL.Scheme || req.URL.Host != first.URL.Host:
		return fmt.Errorf("the server redirects to another origin, %s: use that URL if you trust it", redact(req.URL.String()))
	case req.Method != last.Method:
		return fmt.Errorf("the server redirects %s to %s %s: use that URL", last.Method, req.Method, redact(req.URL.String()))
	}
	return nil
}

// redact returns rawURL without its user info and query, which may hold
// credentials, for messages.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// deleteSession asks the server to end the session. A server may refuse
// (405); it will expire the session in time.
func (t *Transport) deleteSession() {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	resp, _, err := t.do(ctx, http.MethodDelete, nil, false, "", nil, nil)
	if err != nil {
		t.log.Debug("streamable: could not end the session", "url", t.where, "error", err)
		return
	}
	discard(resp.Body)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed {
		t.log.Debug("streamable: the server did not end the session", "url", t.where, "status", resp.Status)
	}
}

// discard reads a little of a body, so that its connection may be reused,
// and closes it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	body.Close()
}

func readSome(r io.Reader, n int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, n))
	return b
}

// snippet quotes the start of what a server sent, for a message: one line
// (white space collapsed), printable, at most 200 bytes.
func snippet(b []byte) string {
	const limit = 200
	var out strings.Builder
	for i, f := range strings.Fields(string(b)) {
		if i > 0 {
			out.WriteByte(' ')
		}
		for _, r := range f {
			if !unicode.IsGraphic(r) {
				r = '?'
			}
			out.WriteRune(r)
		}
		if out.Len() > limit {
			break
		}
	}
	s := out.String()
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "..."
	}
	return s
}
