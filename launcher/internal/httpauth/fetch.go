package httpauth

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
)

// Bounds of what the launcher fetches from an authorization server: its
// metadata and its JWK set come from another machine, which may be slow,
// broken or hostile.
const (
	fetchTimeout  = 10 * time.Second // one request, redirects included
	refreshBudget = 20 * time.Second // discovery and the JWK set together
	maxDocument   = 1 << 20          // the bytes of one document
	maxRedirects  = 3
)

// fetcher gets the JSON documents of an authorization server: over https
// only (http on loopback, where nothing crosses a network), redirects
// held to the same rule, each answer bounded in time and size.
type fetcher struct {
	client *http.Client
}

func newFetcher() *fetcher {
	tr := http.DefaultTransport.(*http.Transport).Clone() // keeps the proxy of the environment
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	tr.ResponseHeaderTimeout = fetchTimeout
	return &fetcher{client: &http.Client{
		Transport: tr,
		Timeout:   fetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			return fetchable(req.URL)
		},
	}}
}

// fetchable says why u may not be fetched, if it may not.
func fetchable(u *url.URL) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && manifest.LoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%s is not https: keys and metadata are fetched over https only (http on loopback)", u.Redacted())
}

// getJSON gets the document at rawURL into into.
func (f *fetcher) getJSON(ctx context.Context, rawURL string, into any) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%q is not a URL", rawURL)
	}
	if err := fetchable(u); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{url: u.Redacted(), status: resp.Status, code: resp.StatusCode}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	if len(data) > maxDocument {
		return fmt.Errorf("GET %s: the answer is longer than %d bytes", u.Redacted(), maxDocument)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("GET %s: not the JSON expected: %v", u.Redacted(), err)
	}
	return nil
}

// A statusError is an answer other than 200.
type statusError struct {
	url, status string
	code        int
}

func (e *statusError) Error() string { return fmt.Sprintf("GET %s: %s", e.url, e.status) }
