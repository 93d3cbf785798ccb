package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/rogpeppe/go-internal/testscript"
)

// mcpWait bounds each answer cmdMCP waits for: a hang guard, not a
// timing check.
const mcpWait = 30 * time.Second

// cmdMCP runs `mcpgen connect ARGS...` as an agent would, and speaks MCP to
// it: it sends each line of FILE in turn and, after a request, waits for
// its answer (notifications that come meanwhile are printed too) before it
// sends the next line; then it closes connect's stdin and waits for it to
// exit. Every message that comes back is printed to stdout, one per line;
// connect's stderr goes to stderr.
//
//	mcp FILE ARGS...
func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: mcp FILE ARGS...")
	}
	lines := strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n")
	cmd := exec.Command("mcpgen", append([]string{"connect"}, args[1:]...)...)
	cmd.Dir = ts.MkAbs(".")
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "GORACE", "MCPGEN_RUNTIME_DIR", "MCPGEN_STATE_DIR", "MCPGEN_WORKSPACE"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	path, err := scriptProgram("mcpgen", ts.Getenv("PATH"))
	ts.Check(err)
	cmd.Path = path
	in, err := cmd.StdinPipe()
	ts.Check(err)
	out, err := cmd.StdoutPipe()
	ts.Check(err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ts.Check(cmd.Start())
	msgs := make(chan []byte)
	go func() { // ends at connect's EOF
		defer close(msgs)
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				msgs <- bytes.TrimSpace(line)
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		in.Close()
		for range msgs {
		}
		err := cmd.Wait()
		fmt.Fprint(ts.Stderr(), stderr.String())
		ts.Check(err)
	}()
	for _, line := range lines {
		if _, err := fmt.Fprintln(in, line); err != nil {
			ts.Fatalf("mcp: writing to connect: %v\nstderr:\n%s", err, stderr.String())
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		ts.Check(json.Unmarshal([]byte(line), &req))
		if req.ID == nil || req.Method == "" {
			continue // a notification, or an answer: nothing comes back
		}
		for waiting := true; waiting; {
			select {
			case m, ok := <-msgs:
				if !ok {
					ts.Fatalf("mcp: connect ended before answering %s\nstderr:\n%s", line, stderr.String())
				}
				fmt.Fprintf(ts.Stdout(), "%s\n", m)
				var resp struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal(m, &resp)
				waiting = !bytes.Equal(resp.ID, req.ID)
			case <-time.After(mcpWait):
				ts.Fatalf("mcp: no answer to %s within %s\nstderr:\n%s", line, mcpWait, stderr.String())
			}
		}
	}
}

// scriptProgram finds a program in a PATH of the script's: the mcpgen that
// the script runs.
func scriptProgram(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name+".exe")} {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found in the script's PATH", name)
}
