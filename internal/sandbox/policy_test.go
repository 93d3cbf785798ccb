package sandbox

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy Policy
		want   string // a part of the error; empty: none
	}{
		{"none", Policy{Read: []string{"/usr"}, Write: []string{"/tmp/w"}, Network: Network{Mode: NetNone}}, ""},
		{"allowlist", Policy{Network: Network{Mode: NetHosts, Hosts: []string{"api.github.com:443", "[::1]:8080"}}, Enforce: EnforceStrict}, ""},
		{"relative read", Policy{Read: []string{"~/.npm"}, Network: Network{Mode: NetAll}}, `sandbox read: "~/.npm" is not an absolute path`},
		{"relative write", Policy{Write: []string{"work"}, Network: Network{Mode: NetAll}}, `sandbox write: "work"`},
		{"unknown mode", Policy{Network: Network{Mode: "some"}}, `unknown mode "some"`},
		{"empty mode", Policy{}, `unknown mode ""`},
		{"allowlist with none", Policy{Network: Network{Mode: NetNone, Hosts: []string{"a:1"}}}, "an allowlist with mode"},
		{"empty allowlist", Policy{Network: Network{Mode: NetHosts}}, "an empty allowlist"},
		{"no port", Policy{Network: Network{Mode: NetHosts, Hosts: []string{"api.github.com"}}}, `"api.github.com": address api.github.com: missing port`},
		{"no host", Policy{Network: Network{Mode: NetHosts, Hosts: []string{":443"}}}, "no host"},
		{"port zero", Policy{Network: Network{Mode: NetHosts, Hosts: []string{"h:0"}}}, `port "0" is not a number from 1 to 65535`},
		{"port name", Policy{Network: Network{Mode: NetHosts, Hosts: []string{"h:https"}}}, `port "https"`},
		{"enforce", Policy{Network: Network{Mode: NetAll}, Enforce: "hard"}, `sandbox enforce: unknown value "hard"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.policy.Check()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}
