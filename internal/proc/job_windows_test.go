package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The test binary doubles as the processes the tests contain: with
// MCPGEN_PROC_HELPER set, it runs a helper instead of the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("MCPGEN_PROC_HELPER") {
	case "":
		os.Exit(m.Run())
	case "sleep":
		// Says whether it runs in a job, then sleeps until killed.
		var in int32 // BOOL
		isProcessInJob := windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")
		_, _, _ = isProcessInJob.Call(uintptr(windows.CurrentProcess()), 0, uintptr(unsafe.Pointer(&in)))
		fmt.Printf("in job %v\n", in != 0)
		time.Sleep(5 * time.Minute)
	case "spawn":
		// Starts a sleeping grandchild, says its pid, waits for stdin.
		g := helperCmd("sleep")
		if err := g.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("grandchild %d\n", g.Process.Pid)
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	case "holder":
		// A launcher stand-in: contains a spawner, says the grandchild's
		// pid, and waits to be killed; its job dies with it.
		c, err := Setup(context.Background(), Options{Mode: ModeJob})
		if err == nil {
			var k *Container
			if k, err = c.New("spawner", Limits{}); err == nil {
				cmd := helperCmd("spawn")
				out, _ := cmd.StdoutPipe()
				if err = k.Start(cmd); err == nil {
					line, _ := bufio.NewReader(out).ReadString('\n')
					fmt.Print(line)
					time.Sleep(5 * time.Minute)
				}
			}
		}
		fmt.Println(err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperCmd(mode string) *exec.Cmd {
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCPGEN_PROC_HELPER="+mode)
	return cmd
}

// grandchild reads "grandchild PID" from r and opens the process, so that
// the test can wait for its end by handle, whatever becomes of the pid.
func grandchild(t *testing.T, r *bufio.Reader) windows.Handle {
	t.Helper()
	line, err := r.ReadString('\n')
	pid, ok := strings.CutPrefix(strings.TrimSpace(line), "grandchild ")
	if !ok {
		t.Fatalf("helper said %q (%v), want \"grandchild PID\"", line, err)
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_TERMINATE, false, uint32(n))
	if err != nil {
		t.Fatalf("open the grandchild %d: %v", n, err)
	}
	t.Cleanup(func() {
		_ = windows.TerminateProcess(h, 1) // if the test failed to end it
		windows.CloseHandle(h)
	})
	return h
}

// ended waits (a bound on a hang, not a timing assertion) for the process
// of h to end.
func ended(h windows.Handle) bool {
	ev, err := windows.WaitForSingleObject(h, 20_000)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func TestJobEndsTree(t *testing.T) {
	c, err := Setup(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Report().Mode; got != ModeJob {
		t.Fatalf("mode %v, want job", got)
	}
	k, err := c.New("spawner", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := helperCmd("spawn")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := k.Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	g := grandchild(t, bufio.NewReader(out))
	// The job may hold a console host too (conhost.exe).
	if pids, err := k.Pids(); err != nil || !slices.Contains(pids, cmd.Process.Pid) || len(pids) < 2 {
		t.Errorf("Pids: %v, %v; want the child %d and the grandchild among them", pids, err, cmd.Process.Pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !ended(g) {
		t.Errorf("the grandchild outlived its container")
	}
}

// TestJobDiesWithHolder kills a launcher stand-in as taskkill /F would
// (TerminateProcess): the system closes its job's handle, and kills what
// the job holds.
func TestJobDiesWithHolder(t *testing.T) {
	holder := helperCmd("holder")
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	g := grandchild(t, bufio.NewReader(out))
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	if !ended(g) {
		t.Errorf("the grandchild outlived the process that held its job")
	}
}

func TestJobStartsInJob(t *testing.T) {
	c, err := Setup(context.Background(), Options{Mode: ModeJob})
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.New("sleeper", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := helperCmd("sleep")
	out, _ := cmd.StdoutPipe()
	if err := k.Start(cmd); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Error(err)
	}
	_ = cmd.Wait()
	if strings.TrimSpace(line) != "in job true" {
		t.Errorf("the child said %q, want \"in job true\"", line)
	}
}

// TestPrepareBatch runs a real batch file found by PATHEXT, with arguments
// that cmd.exe would take for its own syntax if they were not quoted. The
// batch file passes them on as %1 and %*, quotes included, as npm's shims
// do; one that strips them (%~1) and uses them bare exposes them to its
// own parsing, which no caller can prevent.
func TestPrepareBatch(t *testing.T) {
	dir, err := os.MkdirTemp("", "prepare")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir) // best effort: Wine may keep the file a moment
	bat := filepath.Join(dir, "echoargs.cmd")
	if err := os.WriteFile(bat, []byte("@echo off\r\necho 1=%1 all=%*\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"hello world", "x"}, `1="hello world" all="hello world" "x"`},
		{[]string{"a&echo INJECTED", "b|echo INJECTED"}, `1="a&echo INJECTED" all="a&echo INJECTED" "b|echo INJECTED"`},
		// Without a space, os/exec would not quote it, and cmd.exe would
		// run "echo.INJECTED".
		{[]string{"a&echo.INJECTED"}, `1="a&echo.INJECTED" all="a&echo.INJECTED"`},
		{[]string{"<in>", "^caret", "(x)"}, `1="<in>" all="<in>" "^caret" "(x)"`},
		{[]string{`C:\dir\`}, `1="C:\dir\\" all="C:\dir\\"`},
	}
	for _, tt := range tests {
		cmd := exec.Command("echoargs", tt.args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+`;C:\Windows\System32`)
		if err := Prepare(cmd); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
	cmd := exec.Command(bat, "%PATH%")
	if err := Prepare(cmd); err == nil {
		t.Errorf("an argument with %% was accepted")
	}
}
