package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"
)

// This file is how a Client opens a conversation with a server of either
// era: the stdio binding's era probe, and what it learns from it.

// ProbeGrace is how long a probe waits for an answer to server/discover
// before it sends initialize as well: some legacy servers (older Python
// SDK servers among them) say nothing to a request that comes before
// initialize. Under a deadline, the grace is half of the time left at
// most.
const ProbeGrace = time.Second

// ErrProbeEnded is matched (errors.Is), together with ErrClosed, by the
// error of an Open whose server closed the connection (its process exited)
// before its era was known: some legacy servers exit on a request that
// comes before initialize. Open the server's next process with a legacy
// OpenOptions.Version: it gets no probe.
var ErrProbeEnded = errors.New("the server ended while its era was probed")

// OpenOptions say how Client.Open finds the server's era.
type OpenOptions struct {
	// Version, when set, is the revision to speak, and nothing is probed:
	// a legacy revision opens with initialize at it (the server may answer
	// another legacy revision this package speaks), a modern one with
	// server/discover (a server that answers -32022 with another modern
	// revision of ours gets it); any other outcome is an error.
	Version string
	// Known is the server's era as known from before, such as from a
	// catalog of an earlier run of the same server. EraLegacy opens with
	// initialize at once, and probes only when the server refuses it (it
	// may have become modern); EraModern probes without the grace (no
	// initialize unless server/discover gets a legacy answer); EraUnknown
	// probes. Ignored when Version is set.
	Known Era
	// Grace, when positive, replaces ProbeGrace; when negative, initialize
	// is never sent before the probe has its answer (over HTTP, where every
	// request gets one, a 400 included: the Streamable HTTP binding's way).
	Grace time.Duration
}

// Open opens the conversation with the server in the era it speaks, as the
// stdio binding of the modern revision says: it probes with
// server/discover (at ModernVersion, with the client's capabilities and
// identity in _meta). A discover result, or a modern error that lists a
// modern revision of ours, makes the server modern: from then on every
// request of the client carries the _meta that the revision requires, and
// nothing else is sent. Any other error makes it legacy: Open then
// performs the initialize handshake. When the probe has no answer within
// the grace (ProbeGrace), initialize is sent as well, and the first
// decisive answer wins: a discover result or a modern error, or an answer
// to initialize.
//
// The result is the server's answer to initialize, or for a modern server
// its discover result in that form (InitializeResult.Discover holds it as
// sent). Era and Version say what was settled. A server that closes the
// connection during the probe fails Open with an error that matches
// ErrProbeEnded. Open is bounded by ctx and the client's timeout; call it
// once, before any other request.
func (c *Client) Open(ctx context.Context, opts OpenOptions) (*InitializeResult, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout,
			fmt.Errorf("no response within %s: %w", c.timeout, context.DeadlineExceeded))
		defer cancel()
	}
	switch VersionEra(opts.Version) {
	case EraLegacy:
		return c.initializeAt(ctx, opts.Version)
	case EraModern:
		return c.discoverAt(ctx, opts.Version, true)
	}
	if opts.Version != "" {
		return nil, fmt.Errorf("protocol version %q is not one that mcpgen speaks (%s)", opts.Version, strings.Join(AllVersions(), ", "))
	}
	switch opts.Known {
	case EraLegacy:
		res, err := c.initializeAt(ctx, LatestVersion)
		if werr := (*Error)(nil); errors.As(err, &werr) {
			// It answered, and refused: it may be modern now.
			return c.probe(ctx, 0)
		}
		return res, err
	case EraModern:
		return c.probe(ctx, 0)
	}
	return c.probe(ctx, max(cmp.Or(opts.Grace, ProbeGrace), 0))
}

// initializeAt performs the legacy handshake at version.
func (c *Client) initializeAt(ctx context.Context, version string) (*InitializeResult, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "initialize", c.initializeParams(version), &raw); err != nil {
		return nil, err
	}
	return c.initialized(ctx, raw)
}

// discoverParams are the params of server/discover at version: nothing but
// the _meta of a modern request.
func (c *Client) discoverParams(version string) json.RawMessage {
	params, _ := SetMeta(nil, c.metaAt(version)...)
	return params
}

// discoverAt asks server/discover at a modern version, for a server known
// to be modern. again allows one more try at the modern revision of ours
// that the server lists in a -32022 answer: another one, or the same (a
// server may refuse what it lists, as the conformance suite's does once;
// over HTTP an intermediary may have mangled the header).
func (c *Client) discoverAt(ctx context.Context, version string, again bool) (*InitializeResult, error) {
	var raw json.RawMessage
	err := c.conn.Call(ctx, "server/discover", c.discoverParams(version), &raw)
	if werr := (*Error)(nil); errors.As(err, &werr) {
		if supported, ok := werr.SupportedVersions(); ok {
			next := ChooseVersion(supported, EraModern)
			switch {
			case again && next != "":
				return c.discoverAt(ctx, next, false)
			case slices.Contains(supported, version):
				return nil, fmt.Errorf("server/discover: the server refuses %s, which it says it speaks: %w", version, err)
			}
			return nil, fmt.Errorf("server/discover: the server speaks %s, not %s", strings.Join(supported, ", "), version)
		}
	}
	if err != nil {
		return nil, err
	}
	return c.discovered(version, raw)
}

// discovered settles the modern era at version with a discover result.
func (c *Client) discovered(version string, raw json.RawMessage) (*InitializeResult, error) {
	d, err := ParseDiscoverResult(raw)
	if err != nil {
		return nil, fmt.Errorf("server/discover: %w", err)
	}
	c.settle(EraModern, version)
	return d.InitializeResult(), nil
}

// probe finds the server's era with server/discover, and sends initialize
// as well if nothing has answered within grace (zero: never).
func (c *Client) probe(ctx context.Context, grace time.Duration) (*InitializeResult, error) {
	disc, err := c.conn.Go(ctx, "server/discover", c.discoverParams(ModernVersion), nil)
	if err != nil {
		return nil, probeEnded(err)
	}
	if deadline, ok := ctx.Deadline(); ok && grace > 0 {
		// A server that says nothing before initialize gets it with half
		// of the time left at least, however short.
		grace = max(min(grace, time.Until(deadline)/2), time.Millisecond)
	}
	var hedge <-chan time.Time
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		hedge = t.C
	}
	var init *AsyncCall // initialize, once sent
	var initErr error   // its error, while the probe may still say modern
	discDone, initDone := disc.Done(), (<-chan struct{})(nil)
	for {
		select {
		case <-discDone:
			discDone = nil
			res, err, legacy := c.probed(ctx, disc.result, disc.err)
			switch {
			case !legacy:
				return res, err
			case init == nil:
				return c.initializeAt(ctx, LatestVersion)
			case initErr != nil:
				return nil, initErr
			}
			// The initialize sent after the grace decides.
		case <-initDone:
			initDone = nil
			if init.err == nil {
				return c.initialized(ctx, init.result)
			}
			initErr = fmt.Errorf("initialize: %w", init.err)
			if discDone == nil { // the probe said legacy
				return nil, initErr
			}
			// A modern server may refuse initialize: the probe decides.
		case <-hedge:
			hedge = nil
			if init, err = c.conn.Go(ctx, "initialize", c.initializeParams(LatestVersion), nil); err != nil {
				return nil, probeEnded(err)
			}
			initDone = init.Done()
		case <-ctx.Done():
			// The probe is given up; initialize, if sent, is not: a client
			// must not cancel it. The error names what was waited for last.
			disc.Cancel(context.Cause(ctx))
			if init != nil {
				return nil, fmt.Errorf("initialize: %w", context.Cause(ctx))
			}
			return nil, fmt.Errorf("server/discover: %w", context.Cause(ctx))
		}
	}
}

// probed reads the answer to the probe: the modern era settled (or an
// error of a modern server), or legacy.
func (c *Client) probed(ctx context.Context, raw json.RawMessage, err error) (res *InitializeResult, _ error, legacy bool) {
	werr := (*Error)(nil)
	switch {
	case err == nil:
		if _, perr := ParseDiscoverResult(raw); perr != nil {
			// Not a discover result: a legacy server that answers what it
			// does not know.
			return nil, nil, true
		}
		res, err = c.discovered(ModernVersion, raw)
		return res, err, false
	case errors.As(err, &werr) && werr.IsModern():
	case errors.As(err, &werr):
		return nil, nil, true // a legacy server's error
	default:
		return nil, probeEnded(fmt.Errorf("server/discover: %w", err)), false
	}
	// A modern error: the server is modern, or knows of it.
	supported, ok := werr.SupportedVersions()
	if !ok {
		return nil, fmt.Errorf("server/discover: %w", err), false
	}
	switch v := ChooseVersion(supported, EraUnknown); VersionEra(v) {
	case EraModern:
		res, err = c.discoverAt(ctx, v, false)
		return res, err, false
	case EraLegacy:
		// It speaks a legacy revision of ours: the handshake, at that one.
		res, err = c.initializeAt(ctx, v)
		return res, err, false
	}
	return nil, fmt.Errorf("server/discover: the server speaks %s; mcpgen speaks %s",
		strings.Join(supported, ", "), strings.Join(AllVersions(), ", ")), false
}

// probeEnded marks the error of a server that ended during the probe.
func probeEnded(err error) error {
	if errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrProbeEnded, err)
	}
	return err
}
