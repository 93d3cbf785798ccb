package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envHostile makes the test binary the hostile program: it tries one
// thing, named by its arguments, and exits 0 if it managed, exitRefused
// if it was refused.
const (
	envHostile  = "MCPGEN_SANDBOX_TEST_HOSTILE"
	exitRefused = 3
)

func TestMain(m *testing.M) {
	// The test binary stands in for mcpgen: Prepare's command is the
	// binary itself, with the hidden entry.
	if code, ok := Main(); ok {
		os.Exit(code)
	}
	if os.Getenv(envHostile) != "" {
		os.Exit(hostile(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// hostile tries what args say:
//
//	read FILE | write FILE | link OLD NEW | connect HOST:PORT |
//	proxy HOST:PORT | loopback | unix PATH | signal PID | environ PID SECRET |
//	ptrace PID | setsid SELF MARKER | hang MARKER | spawn SELF ARGS...
func hostile(args []string) int {
	err := try(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostile %s: %v\n", strings.Join(args, " "), err)
		return exitRefused
	}
	return 0
}

func try(args []string) error {
	switch args[0] {
	case "read":
		_, err := os.ReadFile(args[1])
		return err
	case "write":
		return os.WriteFile(args[1], []byte("owned"), 0o600)
	case "link":
		return os.Link(args[1], args[2])
	case "connect":
		c, err := net.DialTimeout("tcp", args[1], 10*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	case "proxy":
		// CONNECT through the proxy the sandbox names, as an HTTPS client.
		proxy := strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://")
		if proxy == "" {
			return errors.New("no HTTPS_PROXY")
		}
		c, err := net.DialTimeout("tcp", proxy, 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", args[1], args[1])
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.Contains(line, " 200 ") {
			return fmt.Errorf("the proxy answered %q", strings.TrimSpace(line))
		}
		return nil
	case "loopback":
		// A listener of its own, on its own loopback.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		c, err := net.DialTimeout("tcp", l.Addr().String(), 10*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	case "signal":
		pid, _ := strconv.Atoi(args[1])
		return syscall.Kill(pid, syscall.SIGCONT)
	case "unix":
		c, err := net.DialTimeout("unix", args[1], 10*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	case "ptrace":
		pid, _ := strconv.Atoi(args[1])
		if err := syscall.PtraceAttach(pid); err != nil {
			return err
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WALL, nil)
		return syscall.PtraceDetach(pid)
	case "setsid":
		// A session of its own, and a child left running in it: what a
		// server does to outlive its stop.
		cmd := exec.Command(args[1], "hang", args[2])
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return cmd.Start()
	case "hang":
		time.Sleep(10 * time.Minute)
		return nil
	case "environ":
		b, err := os.ReadFile("/proc/" + args[1] + "/environ")
		if err == nil && !bytes.Contains(b, []byte(args[2])) {
			err = errors.New("read an environ without the secret: another process's")
		}
		return err
	case "spawn":
		cmd := exec.Command(args[1], args[2:]...)
		cmd.Stderr = os.Stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == exitRefused {
			return errors.New("the child was refused")
		}
		return err
	}
	return fmt.Errorf("unknown action %q", args[0])
}

// runHostile runs the test binary as the hostile program, args its
// action, under p (nil: no sandbox), and returns its exit code.
func runHostile(t *testing.T, p *Policy, home string, args ...string) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Bounded, so that a broken sandbox fails the test instead of hanging
	// it; killing the setup step (PID 1 of its namespace) ends the rest.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), envHostile+"=1", "HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	switch {
	case p != nil && hostileSpares != nil:
		err = runSpare(t, hostileSpares, p, cmd, &stderr)
	case p != nil:
		s, err := Prepare(cmd, p)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fallthrough
	default:
		err = cmd.Run()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() == exitRefused:
		t.Logf("refused: %s", strings.TrimSpace(stderr.String()))
		return exitRefused
	default:
		t.Fatalf("hostile %v: %v\n%s", args, err, stderr.String())
		return -1
	}
}

// hostileSpares, when set, is where runHostile takes the setup steps of
// its sandboxed runs from: spares, started ahead.
var hostileSpares *Spares

// runSpare runs cmd in the sandbox p through a spare of s, as cmd.Run
// would, its stderr copied into stderr.
func runSpare(t *testing.T, s *Spares, p *Policy, cmd *exec.Cmd, stderr *bytes.Buffer) error {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stderr = f
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := s.Ready(ctx, p); err != nil {
		t.Fatal(err)
	}
	sp := s.Take(cmd, p)
	if sp == nil {
		t.Fatal("Take found no spare after Ready")
	}
	setup, err := sp.Run(cmd)
	if err != nil {
		_ = sp.Cmd().Wait()
		t.Fatal(err)
	}
	defer setup.Close()
	// Bounded as runHostile's commands are: killing the setup step (PID
	// 1 of its namespace) ends the rest.
	timer := time.AfterFunc(bound, func() { sp.Cmd().Process.Kill() })
	defer timer.Stop()
	err = sp.Cmd().Wait()
	b, _ := os.ReadFile(f.Name())
	stderr.Write(b)
	return err
}

// bound is how long a hostile run may take. It asserts no timing: on a
// loaded machine a run takes what it takes, up to this.
const bound = 60 * time.Second

func requireLandlock(t *testing.T) {
	t.Helper()
	if landlockABI() < abiTCP {
		t.Skipf("the kernel has Landlock ABI %d; these tests need 4 or later (files and TCP)", landlockABI())
	}
}

// TestHostile runs each escape with the sandbox on (refused) and off
// (it succeeds, which shows the test can fail), and each granted use with
// the sandbox on (it works).
func TestHostile(t *testing.T) {
	requireLandlock(t)
	t.Run("namespaces", func(t *testing.T) {
		ok, _, why := namespaces()
		if !ok {
			t.Skipf("no namespaces for the sandbox: %s", why)
		}
		testHostile(t)
	})
	// The same, with each setup step a spare started ahead of need, as a
	// launcher starts its servers.
	t.Run("spares", func(t *testing.T) {
		if ok, _, why := namespaces(); !ok {
			t.Skipf("no namespaces for the sandbox: %s", why)
		}
		hostileSpares = NewSpares(nil)
		defer func() { hostileSpares.Close(); hostileSpares = nil }()
		testHostile(t)
	})
	// Without namespaces (no user namespaces for an unprivileged user),
	// Landlock alone: network none by TCP rules, /proc by granting this
	// process's own directory only.
	t.Run("landlock only", func(t *testing.T) {
		defer func(f func() (bool, bool, string)) { namespaces = f }(namespaces)
		namespaces = func() (bool, bool, string) { return false, false, "pretended off" }
		testHostile(t)
	})
}

func testHostile(t *testing.T) {

	root := t.TempDir()
	home := filepath.Join(root, "home")
	granted := filepath.Join(root, "workspace")
	readable := filepath.Join(root, "readonly")
	other := filepath.Join(root, "other")
	for _, d := range []string{filepath.Join(home, ".ssh"), granted, readable, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := filepath.Join(home, ".ssh", "id_ed25519")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(key, "-----BEGIN OPENSSH PRIVATE KEY----- fake")
	write(filepath.Join(readable, "notes"), "granted")
	write(filepath.Join(other, "notes"), "another workspace's")
	if err := os.Symlink(key, filepath.Join(granted, "key-link")); err != nil {
		t.Fatal(err)
	}

	listen := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		// Accepts until closed by Cleanup, which ends the goroutine.
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return l.Addr().String()
	}
	grantedAddr, otherAddr := listen(), listen()
	_, otherPort, _ := net.SplitHostPort(otherAddr)

	// A process outside the sandbox with a secret in its environment, as
	// the agent that started mcpgen has its API keys.
	const secret = "MCPGEN_TEST_SECRET=sk-not-a-real-key"
	victim := exec.Command("sleep", "600")
	victim.Env = []string{secret}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	victimPid := strconv.Itoa(victim.Process.Pid)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	policy := &Policy{
		Read:    []string{readable},
		Write:   []string{granted},
		Network: Network{Mode: NetHosts, Hosts: []string{grantedAddr}},
	}
	none := &Policy{Write: []string{granted}, Network: Network{Mode: NetNone}}
	loopback := &Policy{Write: []string{granted}, Network: Network{Mode: NetLoopback}}
	nsOn, _, _ := namespaces()
	all := &Policy{Write: []string{granted}, Network: Network{Mode: NetAll}}
	abstract := fmt.Sprintf("mcpgen-sandbox-test-%d", os.Getpid())
	ul, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go func() {
		// Accepts until closed by Cleanup, which ends the goroutine.
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	escapes := []struct {
		name   string
		policy *Policy
		args   []string
	}{
		{"read ssh key", policy, []string{"read", key}},
		{"read another workspace", policy, []string{"read", filepath.Join(other, "notes")}},
		{"write outside", policy, []string{"write", filepath.Join(other, "x")}},
		{"follow symlink out", policy, []string{"read", filepath.Join(granted, "key-link")}},
		{"hard link protected file", policy, []string{"link", key, filepath.Join(granted, "key-hardlink")}},
		{"connect port not granted", policy, []string{"connect", otherAddr}},
		// A name, resolved (localhost stands in for a host of the
		// internet, which the tests cannot reach).
		{"resolve and connect a host", policy, []string{"connect", "localhost:" + otherPort}},
		{"connect with network none", none, []string{"connect", grantedAddr}},
		{"read another process's environ", policy, []string{"environ", victimPid, secret}},
		{"child reads ssh key", policy, []string{"spawn", self, "read", key}},
		{"child writes outside", policy, []string{"spawn", self, "write", filepath.Join(other, "y")}},
		{"ptrace the agent", policy, []string{"ptrace", victimPid}},
		{"signal the agent", policy, []string{"signal", victimPid}},
		// With the whole network, abstract unix sockets are the host's:
		// Landlock's scope keeps them out of reach (ABI 6).
		{"abstract unix socket with network all", all, []string{"unix", "@" + abstract}},
	}
	if nsOn {
		// Without a network namespace, Landlock cannot tell the host's
		// loopback from the sandbox's: the Report says so.
		escapes = append(escapes, struct {
			name   string
			policy *Policy
			args   []string
		}{"connect the host with network loopback", loopback, []string{"connect", grantedAddr}})
	}
	for _, c := range escapes {
		t.Run(c.name, func(t *testing.T) {
			// Off first: the escape works without a sandbox, so a refusal
			// with it is the sandbox's doing.
			if got := runHostile(t, nil, home, c.args...); got != 0 {
				t.Fatalf("without the sandbox: exit %d, want 0 (the test cannot tell a refusal from a broken case)", got)
			}
			os.Remove(filepath.Join(other, "x"))
			os.Remove(filepath.Join(other, "y"))
			os.Remove(filepath.Join(granted, "key-hardlink"))
			if got := runHostile(t, c.policy, home, c.args...); got != exitRefused {
				t.Errorf("with the sandbox: exit %d, want %d (refused)", got, exitRefused)
			}
		})
	}

	grants := []struct {
		name string
		args []string
	}{
		{"read granted", []string{"read", filepath.Join(readable, "notes")}},
		{"write granted", []string{"write", filepath.Join(granted, "out")}},
		{"connect granted port", []string{"connect", grantedAddr}},
		{"child writes granted", []string{"spawn", self, "write", filepath.Join(granted, "child-out")}},
	}
	if nsOn {
		grants = append(grants, []struct {
			name string
			args []string
		}{
			{"own loopback", []string{"loopback"}},
			{"proxy to granted host", []string{"proxy", grantedAddr}},
		}...)
		// The proxy is what the sandbox has of the network: it refuses
		// what the allowlist does not name. (Without the sandbox there is
		// no proxy to ask, so this case has no run with it off; the grant
		// above shows the same request works for a granted host.)
		t.Run("proxy to host not granted", func(t *testing.T) {
			if got := runHostile(t, policy, home, "proxy", otherAddr); got != exitRefused {
				t.Errorf("with the sandbox: exit %d, want %d (refused)", got, exitRefused)
			}
		})
		t.Run("own loopback with network loopback", func(t *testing.T) {
			if got := runHostile(t, loopback, home, "loopback"); got != 0 {
				t.Errorf("with the sandbox: exit %d, want 0 (granted)", got)
			}
		})
	}
	for _, g := range grants {
		t.Run(g.name, func(t *testing.T) {
			if got := runHostile(t, policy, home, g.args...); got != 0 {
				t.Errorf("with the sandbox: exit %d, want 0 (granted)", got)
			}
		})
	}
}

// TestReportDegrades: on a kernel without what a rule needs, the Report
// says the rule is not enforced, and a strict policy refuses to start.
func TestReportDegrades(t *testing.T) {
	defer func(f func() int, g func() (bool, bool, string)) { landlockABI, namespaces = f, g }(landlockABI, namespaces)
	namespaces = func() (bool, bool, string) { return false, false, "pretended off" }
	for _, c := range []struct {
		name    string
		abi     int
		network Network
		want    []string // parts of NotEnforced, in order
	}{
		{"no landlock", 0, Network{Mode: NetNone}, []string{"files: not confined", "network: not confined", "/proc/PID of processes outside the sandbox stays readable"}},
		{"abi 3, none", 3, Network{Mode: NetNone}, []string{"signals", "network: not confined", "what the server starts cannot read its own /proc/self"}},
		{"abi 4, none", 4, Network{Mode: NetNone}, []string{"signals", "UDP is not confined", "/proc/self"}},
		{"abi 10, none", 10, Network{Mode: NetNone}, []string{"/proc/self"}},
		{"abi 7, loopback", 7, Network{Mode: NetLoopback}, []string{"loopback only is not enforced", "/proc/self"}},
		{"abi 7, allowlist", 7, Network{Mode: NetHosts, Hosts: []string{"example.com:443"}}, []string{"hosts of the allowlist are not enforced", "/proc/self"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			landlockABI = func() int { return c.abi }
			p := &Policy{Network: c.network, Enforce: EnforceStrict}
			_, r := decide(p)
			if len(r.NotEnforced) != len(c.want) {
				t.Fatalf("NotEnforced %q, want %d entries like %q", r.NotEnforced, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(r.NotEnforced[i], w) {
					t.Errorf("NotEnforced[%d] = %q, want it to say %q", i, r.NotEnforced[i], w)
				}
			}
			cmd := exec.Command("/bin/true")
			_, err := Prepare(cmd, p)
			var se *StrictError
			if !errors.As(err, &se) {
				t.Fatalf("strict Prepare: got %v, want a StrictError", err)
			}
			if cmd.Path != "/bin/true" || len(cmd.Args) != 1 || cmd.SysProcAttr != nil {
				t.Errorf("a refused Prepare changed cmd: %s %q %+v", cmd.Path, cmd.Args, cmd.SysProcAttr)
			}
		})
	}
}

// BenchmarkSpawnTrue: spawn to exit of /bin/true, without the sandbox,
// with Landlock alone, and with Landlock and namespaces, side by side.
func BenchmarkSpawnTrue(b *testing.B) {
	p := &Policy{Write: []string{b.TempDir()}, Network: Network{Mode: NetNone}}
	noNS := func() (bool, bool, string) { return false, false, "pretended off" }
	for _, c := range []struct {
		name   string
		policy *Policy
		ns     func() (bool, bool, string)
	}{
		{"off", nil, namespaces},
		{"landlock", p, noNS},
		{"landlock+namespaces", p, namespaces},
		{"loopback", &Policy{Write: p.Write, Network: Network{Mode: NetLoopback}}, namespaces},
		{"hosts", &Policy{Write: p.Write, Network: Network{Mode: NetHosts, Hosts: []string{"api.example.com:443"}}}, namespaces},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.policy != nil && landlockABI() == 0 {
				b.Skip("no Landlock")
			}
			defer func(f func() (bool, bool, string)) { namespaces = f }(namespaces)
			namespaces = c.ns
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				var s *Setup
				if c.policy != nil {
					var err error
					if s, err = Prepare(cmd, c.policy); err != nil {
						b.Fatal(err)
					}
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// TestSetsidEscape: a server that starts a child in a session of its own
// and exits leaves nothing running once its sandbox has ended; without the
// sandbox the child survives, which shows the test can fail.
func TestSetsidEscape(t *testing.T) {
	requireLandlock(t)
	if ok, _, why := namespaces(); !ok {
		t.Skipf("no PID namespace for the sandbox: %s", why)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	for _, c := range []struct {
		name    string
		policy  *Policy
		survive bool
	}{{"off", nil, true}, {"on", &Policy{Network: Network{Mode: NetNone}}, false}} {
		t.Run(c.name, func(t *testing.T) {
			marker := fmt.Sprintf("mcpgen-setsid-%d-%s", os.Getpid(), c.name)
			t.Cleanup(func() { killMarked(marker) })
			if got := runHostile(t, c.policy, home, "setsid", self, marker); got != 0 {
				t.Fatalf("setsid: exit %d, want 0", got)
			}
			// The kernel kills what is left in a PID namespace as its
			// PID 1 exits, before that exit is seen: no wait is needed.
			// Off, the child may still be starting: look for a while.
			found := false
			for range 50 {
				if found = len(marked(marker)) > 0; found || !c.survive {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if found != c.survive {
				t.Errorf("the setsid child is running: %v, want %v", found, c.survive)
			}
		})
	}
}

// marked lists the processes whose command line holds marker.
func marked(marker string) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killMarked(marker string) {
	for _, pid := range marked(marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestUnprivileged runs the hostile cases as a user who is not root, as
// most people run mcpgen: the namespaces are then made in a user
// namespace, where the setup step keeps only what it needs to mount /proc
// and bring up the loopback, and the server gets nothing. Run as root, it
// runs the test binary again as nobody.
func TestUnprivileged(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests already run unprivileged")
	}
	if ok, userNS, why := namespacesAs(65534); !ok || !userNS {
		t.Skipf("no user namespaces for an unprivileged user: %s", why)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^(TestHostile|TestSetsidEscape)$/^(namespaces|spares)$|^on$", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestHostile/namespaces/")) || !bytes.Contains(out, []byte("--- PASS: TestHostile/spares/")) {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
}

// namespacesAs is namespaces for a user who is not root.
func namespacesAs(uid int) (ok, userNS bool, why string) {
	if uid == 0 {
		return true, false, ""
	}
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err != nil || strings.TrimSpace(string(b)) == "0" {
		return false, false, "user namespaces are disabled"
	}
	return true, true, ""
}
