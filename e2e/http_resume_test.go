//go:build unix

package e2e

// The HTTP face's resumable streams against the official TypeScript SDK
// client (v1): a tool call's event stream is cut after its first event,
// and the client, on its own, resumes it with a GET that names that event
// (Last-Event-ID), and gets the call's later progress and its answer.
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run HTTPFaceResume ./e2e/

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHTTPFaceResume(t *testing.T) {
	if !enabled {
		t.Skip(howToRun)
	}
	bin := shareBinary(t)
	w := newShareWorld(t, bin)
	w.writeManifest(w.echoServer("echo", nil))
	l := w.launch("--listen", "127.0.0.1:0")
	w.readyPid("echo")
	url := httpURL(t, w)

	// Six steps 300ms apart: the SDK reconnects a second after the cut,
	// so some progress comes while no response carries the stream.
	const steps = 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "http-resume.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", script, url, "6", "300")
	cmd.Env = append(slices.Clip(w.env), "MCP_NODE_MODULES="+os.Getenv("MCP_NODE_MODULES"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK client: %v\n%s%s", err, out, stderr.String())
	}
	var got struct {
		Text     string    `json:"text"`
		Error    string    `json:"error"`
		Progress []float64 `json:"progress"`
		Resumes  []string  `json:"resumes"`
		Cut      string    `json:"cut"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr.String())
	}
	t.Logf("the SDK client: %s", out)
	var want []float64
	for i := 1; i <= steps; i++ {
		want = append(want, float64(i))
	}
	if got.Error != "" || got.Text != "resumed" {
		t.Errorf("the call: text %q, error %q; want %q\n%s", got.Text, got.Error, "resumed", stderr.String())
	}
	if !slices.Equal(got.Progress, want) {
		t.Errorf("progress %v, want %v (each once, in order)", got.Progress, want)
	}
	if got.Cut == "" || !slices.Equal(got.Resumes, []string{got.Cut}) {
		t.Errorf("the stream was cut after event %q; the client resumed from %q, want that one, once", got.Cut, got.Resumes)
	}
	l.stop()
	w.nothingLeft()
}
