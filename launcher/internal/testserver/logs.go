package testserver

import (
	"bytes"
	"log/slog"
	"sync"

	json "github.com/goccy/go-json"
)

// Logs keeps what is logged to it (Logger), as JSON lines, for a test to
// look through.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Logger returns a logger that writes to l, every level.
func (l *Logs) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Records returns the records logged with message msg, each as its
// attributes (numbers as float64).
func (l *Logs) Records(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(l.b.Bytes(), []byte("\n")) {
		var r map[string]any
		if json.Unmarshal(line, &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}
