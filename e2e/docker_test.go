//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/mcp/streamable"
)

// dockerToken is the bearer token that the container's manifest admits.
const dockerToken = "e2e-docker-token-0123456789"

// TestDockerImage builds the repository's image (FROM scratch, fed by a
// static binary that the test builds: nothing is pulled) and runs it as
// Kubernetes would run the chart's pod, on the host's network (loopback
// only, no bridge): an agent connects over HTTP with a token, lists and
// calls tools; the manifest, bind-mounted as a ConfigMap's directory of
// symlinks, is swapped and the launcher reloads; docker stop drains, and
// the launcher exits 0 within the grace period, its record removed;
// docker kill, then start again, sweeps the record that the killed one
// left and serves again.
func TestDockerImage(t *testing.T) {
	sb := newSandbox(t)
	docker := dockerCLI(t)

	// The image, from a context of the Dockerfile, the image's directories
	// and the binary, as the Dockerfile's comment says to build it.
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bctx := sb.path("image")
	copyTree(t, filepath.Join(repo, "deploy", "image", "rootfs"), filepath.Join(bctx, "deploy", "image", "rootfs"))
	copyTree(t, filepath.Join(repo, "Dockerfile"), filepath.Join(bctx, "Dockerfile"))
	sb.must(run{dir: repo, env: []string{"CGO_ENABLED=0"}, args: []string{"go", "build", "-trimpath", "-o", filepath.Join(bctx, "mcpgen"), "./cmd/mcpgen"}})
	image := fmt.Sprintf("mcpgen-e2e:%d", os.Getpid())
	docker.must(t, "build", "-q", "-t", image, bctx)
	t.Cleanup(func() { docker.try("rmi", "-f", image) })

	// The workspace, and the manifest as the kubelet lays a ConfigMap out:
	// mcpgen.toml -> ..data/mcpgen.toml, ..data -> a timestamped directory,
	// swapped by renaming a new ..data over the old.
	ws := sb.path("workspace")
	sb.write(filepath.Join(ws, "hello.txt"), "hello from the workspace\n")
	must(t, os.Chmod(ws, 0o755))
	cm := sb.path("configmap")
	must(t, os.MkdirAll(cm, 0o755))
	configMapSwap(t, cm, "1", dockerManifest(""))
	must(t, os.Symlink("..data/mcpgen.toml", filepath.Join(cm, "mcpgen.toml")))

	// /tmp as a pod's emptyDir: the container's own (the root is
	// read-only), kept when the container restarts.
	tmp := sb.path("tmp")
	must(t, os.Mkdir(tmp, 0o700))
	must(t, os.Chown(tmp, 65532, 65532))

	port := freePort(t)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	name := fmt.Sprintf("mcpgen-e2e-%d", os.Getpid())
	docker.try("rm", "-f", name)
	t.Cleanup(func() { docker.try("rm", "-f", name) })
	docker.must(t, "run", "-d", "--name", name,
		"--network", "host",
		"--read-only", "-v", tmp+":/tmp",
		"-e", "MCPGEN_TOKEN="+dockerToken,
		"-v", cm+":/etc/mcpgen:ro",
		"-v", ws+":/workspace",
		image,
		"launch", "--workspace", "e2e", "--manifest", "/etc/mcpgen/mcpgen.toml", "--dir", "/workspace",
		"--listen", "127.0.0.1:"+strconv.Itoa(port), "--log-format", "json")
	logs := func() string { return docker.try("logs", name).String() }

	// The probes that the chart's pod has answer without a token: the
	// process serves, and it is ready once its server is.
	base := strings.TrimSuffix(url, "/mcp")
	waitStatus(t, base+"/readyz", http.StatusOK, logs)
	waitStatus(t, base+"/healthz", http.StatusOK, logs)

	// An agent: tools listed and called through the gateway, with the
	// token; a wrong one is refused. One server: its tools keep their
	// names.
	waitTools(t, url, func(names []string) bool { return slices.Contains(names, "read_file") }, logs)
	if got := callText(t, url, "read_file", map[string]any{"path": "hello.txt"}); !strings.Contains(got, "hello from the workspace") {
		t.Errorf("files__read_file: %q", got)
	}
	if err := listOnce(context.Background(), url, "wrong-token-0123456789abc", new([]string)); err == nil {
		t.Errorf("a wrong token was admitted")
	}

	// The ConfigMap changes: a server is added, the launcher reloads; the
	// two servers' tools have the same names, which the gateway prefixes.
	configMapSwap(t, cm, "2", dockerManifest("[servers.docs]\nbuiltin = \"files\"\nread_only = true\n"))
	waitTools(t, url, func(names []string) bool { return slices.Contains(names, "docs__read_file") }, logs)
	if got := callText(t, url, "docs__read_file", map[string]any{"path": "hello.txt"}); !strings.Contains(got, "hello from the workspace") {
		t.Errorf("docs__read_file: %q", got)
	}
	if !strings.Contains(logs(), `"msg":"reloaded"`) {
		t.Errorf("no reload logged:\n%s", logs())
	}

	// docker stop: SIGTERM to PID 1, passed on; the launcher stops its
	// servers and exits 0, well within the grace period (137 would be
	// Docker's SIGKILL at its end), and removes its record.
	docker.must(t, "stop", "-t", "30", name)
	if code := strings.TrimSpace(docker.must(t, "inspect", "-f", "{{.State.ExitCode}}", name).stdout); code != "0" {
		t.Fatalf("after docker stop, exit code %s, want 0\n%s", code, logs())
	}
	if !strings.Contains(logs(), `"msg":"session stopped"`) {
		t.Errorf("no \"session stopped\" logged:\n%s", logs())
	}
	record := filepath.Join(tmp, "mcpgen", "run", "e2e", "contained")
	if _, err := os.Stat(record); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a clean stop, the containment record is left: %v", err)
	}

	// Started again, then killed: what the killed launcher recorded is
	// swept by the next start, which serves.
	docker.must(t, "start", name)
	waitTools(t, url, func(names []string) bool { return slices.Contains(names, "docs__read_file") }, logs)
	before := recordLines(t, record)
	if len(before) == 0 {
		t.Fatalf("the running launcher has no record of its servers")
	}
	docker.must(t, "kill", name)
	if left := recordLines(t, record); len(left) == 0 {
		t.Fatalf("the killed launcher left no record to sweep")
	}
	docker.must(t, "start", name)
	waitTools(t, url, func(names []string) bool { return slices.Contains(names, "docs__read_file") }, logs)
	after := recordLines(t, record)
	for _, line := range before {
		if slices.Contains(after, line) {
			t.Errorf("the killed launcher's entry %q is still recorded after the next start: it was not swept\nbefore: %q\nafter: %q", line, before, after)
		}
	}
	docker.must(t, "stop", "-t", "30", name)
	if code := strings.TrimSpace(docker.must(t, "inspect", "-f", "{{.State.ExitCode}}", name).stdout); code != "0" {
		t.Fatalf("after docker stop, exit code %s, want 0\n%s", code, logs())
	}
}

// dockerManifest is the container's manifest: the token from the
// environment, the built-in files server, and more.
func dockerManifest(more string) string {
	return "[session.auth]\ntoken_env = \"MCPGEN_TOKEN\"\n\n[servers.files]\nbuiltin = \"files\"\n\n" + more
}

// configMapSwap writes the manifest into cm as the kubelet updates a
// ConfigMap volume: a new directory, a ..data_tmp symlink to it renamed
// over ..data, the old directory removed.
func configMapSwap(t *testing.T, cm, version, manifest string) {
	t.Helper()
	dir := "..2026_01_01_00_00_0" + version
	must(t, os.Mkdir(filepath.Join(cm, dir), 0o755))
	must(t, os.WriteFile(filepath.Join(cm, dir, "mcpgen.toml"), []byte(manifest), 0o644))
	old, _ := os.Readlink(filepath.Join(cm, "..data"))
	must(t, os.Symlink(dir, filepath.Join(cm, "..data_tmp")))
	must(t, os.Rename(filepath.Join(cm, "..data_tmp"), filepath.Join(cm, "..data")))
	if old != "" {
		must(t, os.RemoveAll(filepath.Join(cm, old)))
	}
}

// waitStatus polls url without a token until it answers want. The bound
// is a hang guard.
func waitStatus(t *testing.T, url string, want int, logs func() string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	got := "no answer"
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
			got = resp.Status
		} else {
			got = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("GET %s: %s, want %d\nlogs:\n%s", url, got, want, logs())
}

// waitTools lists the gateway's tools until ok says they are what the
// test waits for, and returns them. The bound is a hang guard.
func waitTools(t *testing.T, url string, ok func([]string) bool, logs func() string) []string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var names []string
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = listOnce(ctx, url, dockerToken, &names)
		cancel()
		if err == nil && ok(names) {
			return names
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the gateway at %s did not list the tools awaited: %v (last error: %v)\nlogs:\n%s", url, names, err, logs())
	return nil
}

// listOnce opens an HTTP session with the token and lists the tools.
func listOnce(ctx context.Context, url, token string, names *[]string) error {
	c, err := dockerClient(ctx, url, token)
	if err != nil {
		return err
	}
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	*names = (*names)[:0]
	for _, tool := range tools {
		*names = append(*names, tool.Name)
	}
	return nil
}

// callText calls a tool through the gateway and returns its text.
func callText(t *testing.T, url, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := dockerClient(ctx, url, dockerToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text strings.Builder
	for _, block := range res.Content {
		text.WriteString(block.Text)
	}
	if res.IsError {
		t.Fatalf("%s failed: %s", tool, text.String())
	}
	return text.String()
}

// dockerClient is an agent of the gateway: an HTTP session, initialized.
func dockerClient(ctx context.Context, url, token string) (*mcp.Client, error) {
	tr, err := streamable.New(url, streamable.Options{BearerToken: token, NoListen: true})
	if err != nil {
		return nil, err
	}
	c := mcp.NewClient(ctx, tr, tr, mcp.ClientOptions{Info: mcp.Implementation{Name: "e2e-docker", Version: "1"}})
	if _, err := c.Initialize(ctx); err != nil {
		c.Close()
		tr.Close()
		return nil, err
	}
	return c, nil
}

// recordLines returns the entries of the launcher's containment record.
func recordLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	return lines
}

// A dockerCmd runs the docker client.
type dockerCmd struct {
	bin string
	env []string
}

// dockerCLI returns the docker client. When no daemon answers, and this is
// root with dockerd installed, it starts one of its own for the test
// (without a bridge or iptables: the container runs on the host's
// network), stopped at the end; else it skips the test, saying why.
func dockerCLI(t *testing.T) dockerCmd {
	t.Helper()
	bin, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker client on PATH: install Docker (apt-get install docker.io) to run this test")
	}
	d := dockerCmd{bin: bin, env: os.Environ()}
	if res := d.try("version", "--format", "{{.Server.Version}}"); res.err != nil {
		dockerd, err := exec.LookPath("dockerd")
		if err != nil || os.Geteuid() != 0 {
			t.Skipf("no Docker daemon answers, and this test can start one only as root with dockerd installed (apt-get install docker.io): %s", strings.TrimSpace(res.stderr))
		}
		d.env = append(d.env, "DOCKER_HOST="+startDockerd(t, dockerd))
		deadline := time.Now().Add(2 * time.Minute) // a hang guard
		for d.try("version", "--format", "{{.Server.Version}}").err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("the dockerd started for the test does not answer")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// Without buildx, BuildKit cannot run: the classic builder can, and
	// needs nothing more for a FROM scratch image.
	if d.try("buildx", "version").err != nil {
		d.env = append(d.env, "DOCKER_BUILDKIT=0")
	}
	return d
}

// startDockerd starts a Docker daemon whose socket, data and state are in a
// directory of its own, and returns its DOCKER_HOST. Cleanup stops it by
// its pid (SIGTERM, then SIGKILL after a minute) and removes the directory.
func startDockerd(t *testing.T, dockerd string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpgen-e2e-dockerd-")
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "docker.sock")
	cmd := exec.Command(dockerd,
		"--host", "unix://"+sock,
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--bridge=none", "--iptables=false", "--ip6tables=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dockerd: %v", err)
	}
	exited := make(chan struct{})
	go func() { // dockerd's one Wait; ends when it exits
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			// Its group: the containerd it started goes too.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// The containerd shims outlive dockerd a moment: wait for those
		// of this daemon (named by their command lines), then end them.
		deadline := time.Now().Add(30 * time.Second)
		for pids := procsNaming(dir); len(pids) > 0; pids = procsNaming(dir) {
			if time.Now().After(deadline) {
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Logf("killed processes of the test's dockerd left after it: %v", pids)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logFile.Name()); err == nil {
				t.Logf("dockerd's log:\n%s", b)
			}
		}
		// dockerd leaves mounts behind (its network namespace's file):
		// detached first, deepest first, so that the directory goes.
		for _, m := range mountsUnder(dir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("removing dockerd's directory: %v", err)
		}
	})
	return "unix://" + sock
}

// procsNaming returns the pids of the processes whose command line names
// dir.
func procsNaming(dir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var ms []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// The fifth field is the mount point, with spaces escaped (\040).
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			ms = append(ms, f[4])
		}
	}
	slices.SortFunc(ms, func(a, b string) int { return len(b) - len(a) })
	return ms
}

func (d dockerCmd) try(args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Env = d.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

func (d dockerCmd) must(t *testing.T, args ...string) result {
	t.Helper()
	res := d.try(args...)
	if res.err != nil {
		t.Fatalf("docker %s: %s", strings.Join(args, " "), res)
	}
	return res
}

// copyTree copies a file, or a directory and what it holds, keeping modes.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// freePort returns a port free on loopback now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
