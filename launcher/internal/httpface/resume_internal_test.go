package httpface

import (
	"testing"
)

// The helpers of the resume tests that read the session's state.

// waitKeptAnswer waits until the answer to the request whose id is key
// is kept, its client gone.
func waitKeptAnswer(t *testing.T, s *session, key string) {
	t.Helper()
	waitFor(t, "the answer to be kept", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for tr := range s.detached {
			if tr.key == key && tr.answerSeq != 0 {
				return true
			}
		}
		return false
	})
}

func (s *session) tagForTest() string { return s.tag }

// checkKept checks the bounds of what s keeps for a resume.
func checkKept(t *testing.T, s *session) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	n, bytes := 0, 0
	for _, k := range s.kept {
		n++
		bytes += len(k.line)
	}
	if n > maxBacklog || bytes > maxBacklogBytes || bytes != s.keptBytes {
		t.Errorf("kept %d events, %d bytes (counted %d): the bounds are %d, %d", n, bytes, s.keptBytes, maxBacklog, maxBacklogBytes)
	}
}
