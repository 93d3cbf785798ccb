package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// These tests run the system's own programs under sandbox-exec on a Mac.
// They were written without one (Linux's tests check the profile as
// text): on its first run on macOS, a failure here is the first place
// to look, with `log show --last 5m --predicate 'eventMessage CONTAINS
// "deny("'` naming what Seatbelt refused.

// runUnder runs argv under p (nil: no sandbox) and returns its exit code
// and output.
func runUnder(t *testing.T, p *Policy, env []string, argv ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if p != nil {
		s, err := Prepare(cmd, p)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return 0, out.String()
}

// TestSeatbeltOnMac: each escape is refused with the sandbox and works
// without it (which shows the test can fail); each grant works with it.
func TestSeatbeltOnMac(t *testing.T) {
	if !haveSandboxExec() {
		t.Skip(sandboxExec + " is missing")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, other := filepath.Join(root, "ws"), filepath.Join(root, "other")
	secret := filepath.Join(root, "home", ".ssh", "id_ed25519")
	for _, dir := range []string{ws, other, filepath.Dir(secret)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "granted"), []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		// Ends when the deferred Close closes ln.
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	none := &Policy{Write: []string{ws}, Network: Network{Mode: NetNone}}

	escapes := []struct {
		name string
		argv []string
	}{
		{"read a secret", []string{"/bin/cat", secret}},
		{"write outside", []string{"/usr/bin/touch", filepath.Join(other, "x")}},
		{"hard link a secret in", []string{"/bin/ln", secret, filepath.Join(ws, "hard")}},
		{"a child reads a secret", []string{"/bin/sh", "-c", "cat " + strconv.Quote(secret)}},
		{"connect to the loopback", []string{"/usr/bin/nc", "-z", "-w", "5", "127.0.0.1", port}},
	}
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) {
			// A new name each run, so that the run without the sandbox
			// leaves nothing behind that the next would trip on.
			if code, out := runUnder(t, none, nil, e.argv...); code == 0 {
				t.Errorf("with the sandbox: it worked (%s)", out)
			}
			_ = os.Remove(filepath.Join(ws, "hard"))
			if code, out := runUnder(t, nil, nil, e.argv...); code != 0 {
				t.Errorf("without the sandbox: exit %d (%s): the test cannot fail", code, out)
			}
			_ = os.Remove(filepath.Join(ws, "hard"))
		})
	}
	t.Run("a link out", func(t *testing.T) {
		link := filepath.Join(ws, "sym")
		if err := os.Symlink(secret, link); err != nil {
			t.Fatal(err)
		}
		if code, out := runUnder(t, none, nil, "/bin/cat", link); code == 0 {
			t.Errorf("with the sandbox: it worked (%s)", out)
		}
	})
	t.Run("another process's environment", func(t *testing.T) {
		// ps -E shows a process's environment as it was started: a
		// process of the same user, outside the sandbox, holds the
		// marker in its own.
		marker := "MCPGEN_SEATBELT_SECRET=" + strconv.Itoa(os.Getpid())
		other := exec.Command("/bin/sleep", "60")
		other.Env = append(os.Environ(), marker)
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = other.Process.Kill()
			_ = other.Wait()
		}()
		argv := []string{"/bin/ps", "-E", "-ww", "-o", "command", "-p", strconv.Itoa(other.Process.Pid)}
		if _, out := runUnder(t, none, nil, argv...); strings.Contains(out, marker) {
			t.Errorf("with the sandbox: ps read the environment: %s", out)
		}
		if _, out := runUnder(t, nil, nil, argv...); !strings.Contains(out, marker) {
			t.Errorf("without the sandbox: ps did not read the environment (%s): the test cannot fail", out)
		}
	})

	grants := []struct {
		name string
		p    *Policy
		argv []string
	}{
		{"read in the workspace", none, []string{"/bin/cat", filepath.Join(ws, "granted")}},
		{"write in the workspace", none, []string{"/usr/bin/touch", filepath.Join(ws, "new")}},
		{"write in TMPDIR", none, []string{"/bin/sh", "-c", `echo x > "$TMPDIR/t"`}},
		{"a child writes in the workspace", none, []string{"/bin/sh", "-c", "echo x > " + strconv.Quote(filepath.Join(ws, "child"))}},
		{"the loopback, granted", &Policy{Write: []string{ws}, Network: Network{Mode: NetLoopback}}, []string{"/usr/bin/nc", "-z", "-w", "5", "127.0.0.1", port}},
	}
	for _, g := range grants {
		t.Run(g.name, func(t *testing.T) {
			if code, out := runUnder(t, g.p, nil, g.argv...); code != 0 {
				t.Errorf("with the sandbox: exit %d (%s)", code, out)
			}
		})
	}

	t.Run("hosts", func(t *testing.T) {
		granted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "granted") }))
		defer granted.Close()
		notGranted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "not granted") }))
		defer notGranted.Close()
		hosts := &Policy{Write: []string{ws}, Network: Network{Mode: NetHosts, Hosts: []string{strings.TrimPrefix(granted.URL, "http://")}}}
		// curl -p tunnels plain HTTP through HTTPS_PROXY with CONNECT, as
		// it would HTTPS.
		curl := func(url string) []string {
			return []string{"/bin/sh", "-c", `exec /usr/bin/curl -sS -p -x "$HTTPS_PROXY" ` + url}
		}
		if code, out := runUnder(t, hosts, nil, curl(granted.URL)...); code != 0 || out != "granted" {
			t.Errorf("the granted host through the proxy: exit %d (%s)", code, out)
		}
		if code, out := runUnder(t, hosts, nil, curl(notGranted.URL)...); code == 0 {
			t.Errorf("a host not granted through the proxy: it worked (%s)", out)
		}
		// Around the proxy, straight to a port not granted.
		if code, out := runUnder(t, hosts, nil, "/usr/bin/nc", "-z", "-w", "5", "127.0.0.1", port); code == 0 {
			t.Errorf("a port not granted, directly: it worked (%s)", out)
		}
	})
}
