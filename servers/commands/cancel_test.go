package commands

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
)

// TestResultMessage: what the model reads of a run that ended early says
// whether the command ran.
func TestResultMessage(t *testing.T) {
	tool := &manifest.Tool{Name: "wait"}
	tests := []struct {
		name string
		r    *Result
		want string
	}{
		{"cancelled while it ran", &Result{Exit: -1, Cancelled: context.Canceled, Elapsed: 2*time.Second + 40*time.Millisecond},
			"tool \"wait\" was cancelled after 2s; its processes were killed\n"},
		{"stopped for another reason", &Result{Exit: -1, Cancelled: errors.New("the server is stopping"), Elapsed: 350 * time.Millisecond},
			"tool \"wait\" was stopped after 350ms (the server is stopping); its processes were killed\n"},
		{"never started", &Result{Exit: -1, Err: errors.New(`command "nope" not found on PATH`)},
			"tool \"wait\" did not run: command \"nope\" not found on PATH\n"},
	}
	for _, tt := range tests {
		res := result(tool, tt.r, time.Minute)
		if !res.IsError || len(res.Content) != 1 || res.Content[0].Text != tt.want {
			t.Errorf("%s: got isError=%v %q, want %q", tt.name, res.IsError, res.Content, tt.want)
		}
	}
}

// TestRunCancelled: a call cancelled while its command runs is said to
// have been cancelled after it ran, never that it did not run; one
// cancelled before, that it did not run.
func TestRunCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Result, 1)
	go func() {
		done <- Run(ctx, containment(t), "wait", []string{"sh", "-c", "touch started; exec sleep 30"}, dir, os.Environ(), time.Minute)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the command did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	r := <-done
	if r.Err != nil || !errors.Is(r.Cancelled, context.Canceled) || r.Elapsed <= 0 {
		t.Errorf("got Err %v, Cancelled %v, Elapsed %v; want no Err, cancelled, a duration", r.Err, r.Cancelled, r.Elapsed)
	}
	text := result(&manifest.Tool{Name: "wait"}, r, time.Minute).Content[0].Text
	if !strings.HasPrefix(text, `tool "wait" was cancelled after `) || strings.Contains(text, "did not run") {
		t.Errorf("got %q", text)
	}

	r = Run(ctx, containment(t), "wait", []string{"sh", "-c", "touch again"}, dir, os.Environ(), time.Minute)
	text = result(&manifest.Tool{Name: "wait"}, r, time.Minute).Content[0].Text
	if text != "tool \"wait\" did not run: the call was cancelled before it started: context canceled\n" {
		t.Errorf("cancelled before: got %q", text)
	}
	if _, err := os.Stat(filepath.Join(dir, "again")); err == nil {
		t.Error("a call cancelled before it started ran")
	}
}
