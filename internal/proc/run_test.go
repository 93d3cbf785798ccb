//go:build unix

package proc

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	cancelled := errors.New("the test cancelled it")
	tests := []struct {
		name       string
		script     string
		same       bool // stdout and stderr to one writer
		cancel     bool // cancel ctx once the script has written its first line
		wantOut    string
		wantErr    string
		wantStatus int // the exit status, when wantErr is empty and it is not 0
	}{
		{name: "both streams in order", script: "echo out; echo err >&2; echo out2", same: true, wantOut: "out\nerr\nout2\n"},
		{name: "stdout alone", script: "echo out; echo err >&2", wantOut: "out\n"},
		{name: "exit status", script: "echo bye; exit 3", wantOut: "bye\n", wantStatus: 3},
		// The background sleep holds stdout open: Run returns anyway, and
		// kills it.
		{name: "daemon left behind", script: "sleep 300 & echo $!", wantOut: "$pid\n"},
		{name: "cancelled", script: "sleep 300 & echo $!; wait", cancel: true, wantOut: "$pid\n", wantErr: cancelled.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut := NewTail(1<<10), NewTail(1<<10)
			spec := &Spec{Path: "sh", Args: []string{"-c", tt.script}, Stderr: errOut}
			if tt.same {
				spec.Stderr = out
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if tt.cancel {
				go func() { // ends when the script has written, or the test has
					for ctx.Err() == nil && len(out.Bytes()) == 0 {
						time.Sleep(5 * time.Millisecond)
					}
					cancel(cancelled)
				}()
			}
			err := Run(ctx, spec, out)

			got := string(out.Bytes())
			want := tt.wantOut
			if strings.Contains(want, "$pid") {
				pid, perr := strconv.Atoi(strings.TrimSpace(got))
				if perr != nil {
					t.Fatalf("output %q: want the background pid", got)
				}
				waitGone(t, pid)
				want = strings.ReplaceAll(want, "$pid", strconv.Itoa(pid))
			}
			if got != want {
				t.Errorf("stdout: got %q, want %q", got, want)
			}
			if !tt.same && tt.name == "stdout alone" && string(errOut.Bytes()) != "err\n" {
				t.Errorf("stderr: got %q, want %q", errOut.Bytes(), "err\n")
			}
			var ee *exec.ExitError
			switch {
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error: got %v, want %s", err, tt.wantErr)
				}
			case tt.wantStatus != 0:
				if !errors.As(err, &ee) || ee.ExitCode() != tt.wantStatus {
					t.Errorf("error: got %v, want exit status %d", err, tt.wantStatus)
				}
			case err != nil:
				t.Errorf("error: got %v, want nil", err)
			}
		})
	}
}

func TestRunNotFound(t *testing.T) {
	err := Run(context.Background(), &Spec{Path: "mcpgen-no-such-command"}, nil)
	var pe *PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `command "mcpgen-no-such-command" not found on PATH`) {
		t.Errorf("got %v, want a PermanentError that says the command is not found", err)
	}
}

// waitGone waits until pid is no process of ours any more: a bound on a
// hang, not a timing assertion.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived Run", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
