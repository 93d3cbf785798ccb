package httpguard

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// The limits of the HTTP face's server. There is no ReadTimeout or
// WriteTimeout: a response stream (SSE) lasts as long as its tool call, and
// net/http would end the request's context once a read deadline passed.
// The body has its own deadline instead (ReadBody).
const (
	// ReadHeaderTimeout bounds how long a client takes to send a request's
	// headers: connections opened and fed a byte at a time must not pile
	// up.
	ReadHeaderTimeout = 10 * time.Second
	// ReadBodyTimeout bounds how long a client takes to send a request's
	// body.
	ReadBodyTimeout = 30 * time.Second
	// IdleTimeout closes a kept-alive connection that carries no request.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
	// MaxBody is the largest body of an MCP request: the longest message
	// that stdio carries to a server in one line.
	MaxBody = mcp.MaxLineSize
)

// Server returns the http.Server of the HTTP face for h, with the limits
// above, TLS 1.2 at least (when it serves HTTPS), and the server's own
// errors (a TLS handshake that failed, say) logged to log as warnings.
func Server(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// readBodyTimeout is ReadBodyTimeout, which tests shorten.
var readBodyTimeout = ReadBodyTimeout

// Media types of the Streamable HTTP transport.
const (
	typeJSON   = "application/json"
	typeStream = "text/event-stream"
)

// Check refuses, and answers, a request to an MCP endpoint that the
// Streamable HTTP transport does not allow, and reports whether it may go
// on:
//
//   - a POST whose body is not JSON (its Content-Type, charset UTF-8 if
//     any): 415;
//   - a POST whose Accept does not take both JSON and an event stream
//     (the server may answer either): 406;
//   - a GET (the legacy era's stream) whose Accept does not take an event
//     stream: 406.
//
// A request without Accept takes anything (RFC 9110). Other methods pass:
// which ones the endpoint serves is the endpoint's to say.
func Check(w http.ResponseWriter, r *http.Request) bool {
	switch r.Method {
	case http.MethodPost:
		if !jsonBody(r.Header.Get("Content-Type")) {
			w.Header().Set("Accept-Post", typeJSON)
			Refuse(w, http.StatusUnsupportedMediaType, "the body of an MCP request is JSON: send it with Content-Type: application/json")
			return false
		}
		if !accepts(r.Header.Values("Accept"), typeJSON) || !accepts(r.Header.Values("Accept"), typeStream) {
			Refuse(w, http.StatusNotAcceptable, "an MCP client must accept both application/json and text/event-stream: send Accept: application/json, text/event-stream")
			return false
		}
	case http.MethodGet:
		if !accepts(r.Header.Values("Accept"), typeStream) {
			Refuse(w, http.StatusNotAcceptable, "the GET stream is an event stream: send Accept: text/event-stream")
			return false
		}
	}
	return true
}

// jsonBody reports whether a Content-Type is JSON, in UTF-8 when it says a
// charset.
func jsonBody(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != typeJSON {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// accepts reports whether the Accept headers take the media type want
// (type/subtype): by name, or through type/* or */*, at a q above 0. No
// header takes anything.
func accepts(headers []string, want string) bool {
	if len(headers) == 0 {
		return true
	}
	wantType, _, _ := strings.Cut(want, "/")
	for _, h := range headers {
		for r := range strings.SplitSeq(h, ",") {
			if strings.TrimSpace(r) == "" {
				continue
			}
			mt, params, err := mime.ParseMediaType(r)
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err != nil || v <= 0 {
					continue
				}
			}
			if mt == want || mt == "*/*" || mt == wantType+"/*" {
				return true
			}
		}
	}
	return false
}

// ReadBody reads the body of a request to an MCP endpoint, max bytes at
// most (MaxBody unless tests say less), within ReadBodyTimeout. A longer
// body is refused with 413, before a byte of it is read when its
// Content-Length says so; a body that does not come in time gets 408, and
// one cut short (the client went away) no answer: there is no one to read
// it.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) (body []byte, ok bool) {
	if r.ContentLength > max {
		refuseTooLarge(w, max)
		return nil, false
	}
	rc := http.NewResponseController(w)
	// Not every writer has deadlines (a test's recorder): then the body is
	// read without one.
	_ = rc.SetReadDeadline(time.Now().Add(readBodyTimeout))
	defer rc.SetReadDeadline(time.Time{})
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		refuseTooLarge(w, max)
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		Refuse(w, http.StatusRequestTimeout, fmt.Sprintf("the body did not come within %v", readBodyTimeout))
		return nil, false
	case err != nil:
		return nil, false
	}
	return body, true
}

func refuseTooLarge(w http.ResponseWriter, max int64) {
	Refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is longer than %d bytes, the most an MCP message may have here", max))
}
