package manifest

import (
	"errors"
	"fmt"
	"os"
)

// A Remote is how to reach one remote server: its templates resolved. It
// holds secrets (the token, and headers that come from the environment):
// it is for the connection only, never to be written or logged.
type Remote struct {
	URL         string
	Headers     []EnvVar // in file order
	BearerToken string   // the value of bearer_token_env; empty when none
}

// Remote resolves a remote server's url, headers and bearer token, from
// the context and, failing that, from getenv. A bearer_token_env that is
// unset or empty is an error, as it is for Codex: the server would refuse
// every request.
func (m *Manifest) Remote(s *Server, c *Context, getenv Lookup) (*Remote, error) {
	if s.Kind != KindRemote {
		return nil, fmt.Errorf("server %q is a %s server, not a remote one", s.Name, s.Kind)
	}
	lookup := m.lookup(c, getenv)
	r := &Remote{}
	var err error
	if r.URL, err = m.expand(s.URL, lookup, "servers", s.Name, "url"); err != nil {
		return nil, err
	}
	for _, h := range s.Headers {
		v, err := m.expand(h.Value, lookup, "servers", s.Name, "headers", h.Name)
		if err != nil {
			return nil, err
		}
		r.Headers = append(r.Headers, EnvVar{h.Name, v})
	}
	if s.BearerTokenEnv != "" {
		if getenv == nil {
			getenv = os.LookupEnv
		}
		r.BearerToken, _ = getenv(s.BearerTokenEnv)
		if r.BearerToken == "" {
			return nil, m.errorAt([]string{"servers", s.Name, "bearer_token_env"},
				errors.New(s.BearerTokenEnv+" is not set or empty: export it where the launcher starts"))
		}
	}
	return r, nil
}
