package mcp

import (
	"strings"
	"testing"
)

// TestOpenPinnedRetriesListedVersion: a server that refuses the pinned
// modern revision once while listing it among those it speaks (as the
// conformance suite's request-metadata server does) is asked once more at
// it; one that keeps refusing gets no third request, and an error that
// says so.
func TestOpenPinnedRetriesListedVersion(t *testing.T) {
	for _, always := range []bool{false, true} {
		discovers := 0
		s, c := newScripted(t, ClientOptions{}, func(s *scripted, msg *Message) {
			if msg.Method != "server/discover" {
				legacyScript(s, msg)
				return
			}
			discovers++
			if discovers == 1 || always {
				s.reply(msg, "", UnsupportedVersionError(ModernVersion, []string{ModernVersion}))
				return
			}
			modernScript(s, msg)
		})
		_, err := c.Open(t.Context(), OpenOptions{Version: ModernVersion})
		got := strings.Join(s.methods(), " ")
		if always {
			if err == nil || !strings.Contains(err.Error(), "refuses 2026-07-28, which it says it speaks") || got != "server/discover server/discover" {
				t.Errorf("always refused: got %v, the server read %s; want one retry and an error that says so", err, got)
			}
			continue
		}
		if err != nil || c.Era() != EraModern || got != "server/discover server/discover" {
			t.Errorf("refused once: got %v (era %v), the server read %s; want modern after one retry", err, c.Era(), got)
		}
	}
}
