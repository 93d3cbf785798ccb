package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every agent starts mcpgen serve NAME or mcpgen connect once per server,
// so mcpgen's own start is on every agent's critical path. What Go itself
// costs to start a process is the floor: a minimal Go program doing the
// same trivial work. The target is mcpgen within twice the floor on the
// serve and connect paths.

// floorProgram is the floor: with "answer", it reads one line of stdin,
// answers it with one line, and exits at the end of its input, as a server
// does; without, it prints a line, as --version does.
const floorProgram = `package main

import (
	"bufio"
	"io"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "answer" {
		r := bufio.NewReader(os.Stdin)
		if _, err := r.ReadBytes('\n'); err != nil {
			os.Exit(1)
		}
		os.Stdout.WriteString(` + "`" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n`" + `)
		io.Copy(io.Discard, r)
		return
	}
	os.Stdout.WriteString("floor\n")
}
`

var buildFloor = sync.OnceValues(func() (string, error) {
	return buildProgram("floor", "module floor\n\ngo 1.26\n", floorProgram)
})

// buildDeps builds the floor of mcpgen's dependencies: the floor's
// program, linked with every package that mcpgen links but its own, whose
// inits (and size) Go pays for at every start before main runs, so that
// mcpgen could not start faster without dropping one. It is built against
// mcpgen's go.mod, for the same versions.
var buildDeps = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		return "", fmt.Errorf("go list -deps: %v", err)
	}
	var imports strings.Builder
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(pkg, "github.com/mcpgen/mcpgen"), pkg == "unsafe", pkg == "embed",
			strings.HasPrefix(pkg, "internal/"), strings.HasPrefix(pkg, "vendor/"), pkg == "runtime",
			strings.Contains(pkg, "/internal/"), strings.HasSuffix(pkg, "/internal"):
			continue
		}
		fmt.Fprintf(&imports, "\t_ %q\n", pkg)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		return "", err
	}
	gomod = bytes.Replace(gomod, []byte("module github.com/mcpgen/mcpgen\n"), []byte("module deps\n"), 1)
	src := strings.Replace(floorProgram, "import (\n", "import (\n"+imports.String(), 1)
	return buildProgram("deps", string(gomod), src, "../../go.sum")
})

// buildProgram builds the program src, with its go.mod (and a go.sum to
// copy), into the bin dir as name.
func buildProgram(name, gomod, src string, gosum ...string) (string, error) {
	dir, err := makeBinDir()
	if err != nil {
		return "", err
	}
	srcDir := filepath.Join(dir, name+"-src")
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return "", err
	}
	files := map[string]string{"go.mod": gomod, "main.go": src}
	for _, f := range gosum {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		files["go.sum"] = string(b)
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(srcDir, f), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, name+exeSuffix)
	cmd := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	cmd.Dir = srcDir
	// The module cache has what mcpgen was built with: no network.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build (%s): %v\n%s", name, err, out)
	}
	return bin, nil
}

// initializeLine is the request an agent sends first.
const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"

// startupWait bounds each process of the benchmark: a hang guard, not a
// timing check.
const startupWait = 30 * time.Second

// startupCase is one command line whose start is measured: to its exit
// (with status exit), or, with answer, to its answer to initialize (then
// its stdin is closed and it is waited for, outside the measurement).
type startupCase struct {
	args   []string
	answer bool
	exit   int
}

// A startTime is how long one process took: wall, to its exit or its
// answer; cpu, the processor time it used in all (user and system), which
// depends less on the load of a shared machine.
type startTime struct{ wall, cpu time.Duration }

// startOnce runs bin with c's arguments in dir, with env, and returns how
// long it took.
func startOnce(bin string, c startupCase, dir string, env []string) (startTime, error) {
	cmd := exec.Command(bin, c.args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cpu := func() time.Duration { return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() }
	if !c.answer {
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == c.exit:
		case err != nil || c.exit != 0:
			return startTime{}, fmt.Errorf("%s %s: %v, want exit status %d\n%s", bin, strings.Join(c.args, " "), err, c.exit, stderr.String())
		}
		return startTime{d, cpu()}, nil
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return startTime{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return startTime{}, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return startTime{}, err
	}
	// The hang guard: kills the process, which ends the read below.
	timer := time.AfterFunc(startupWait, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	_, _ = io.WriteString(in, initializeLine)
	line, rerr := bufio.NewReader(out).ReadString('\n')
	d := time.Since(t0)
	in.Close()
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":1,"result":`) {
		return startTime{}, fmt.Errorf("%s %s: got %q (%v, %v), want the answer to initialize\n%s", bin, strings.Join(c.args, " "), line, rerr, werr, stderr.String())
	}
	return startTime{d, cpu()}, nil
}

// startupEnv is the environment of every process the benchmark starts:
// the workspace context, a home and runtime dirs of the benchmark's own.
func startupEnv(dir string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"USER=bench",
		"WORKSPACE_ID=bench",
		"WORKSPACE_DIR=" + filepath.Join(dir, "ws"),
		"MCPGEN_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"MCPGEN_STATE_DIR=" + filepath.Join(dir, "state"),
		"MCPGEN_CEILING_DIRECTORIES=" + filepath.Dir(dir),
	}
	if runtime.GOOS == "windows" {
		for _, k := range []string{"SYSTEMROOT", "LOCALAPPDATA", "TEMP", "TMP"} {
			env = append(env, k+"="+os.Getenv(k))
		}
	}
	return env
}

// startupManifest is the benchmark's mcpgen.toml: a server of each kind
// that serve runs itself, and a command server, which serve replaces
// itself with: the floor, answering.
func startupManifest(floor string) string {
	return fmt.Sprintf(`version = 1

[workspace]
dir = "ws"

[servers.files]
builtin = "files"
read_only = true

[servers.git]
description = "Declared tools"
[servers.git.tools.status]
run = ["git", "status", "--short"]
[servers.git.tools.log]
run = ["git", "log", "-n", "{count}"]
args.count = { type = "integer", default = 10 }

[servers.floor]
command = %q
args = ["answer"]
`, floor)
}

// BenchmarkStartup measures mcpgen's start on the paths agents take, side
// by side with the floor doing the same trivial work, and with deps, the
// floor linked with mcpgen's dependencies (see buildDeps), each process
// started after the other's so that load on the machine falls on all
// alike. What counts are the reported medians, floor-ms, deps-ms and
// mcpgen-ms (to the exit or the answer), and mcpgen-x, mcpgen's over the
// floor's; -cpu-ms and -cpu-x are the same for the processor time, which a
// busy machine inflates less (ns/op is the sum of all). With
// MCPGEN_BENCH_BASE=/path/to/another/mcpgen, base-ms and the others measure
// that build in the same run (a build of main, say). mcpgen is built as go
// build builds it here: with cgo, where there is a C compiler, unless
// CGO_ENABLED=0.
//
//	go test -run '^$' -bench Startup -benchtime 200x ./cmd/mcpgen
func BenchmarkStartup(b *testing.B) {
	bin, err := buildMcpgen()
	if err != nil {
		b.Fatal(err)
	}
	floor, err := buildFloor()
	if err != nil {
		b.Fatal(err)
	}
	deps, err := buildDeps()
	if err != nil {
		b.Fatal(err)
	}
	base := os.Getenv("MCPGEN_BENCH_BASE")

	dir := b.TempDir()
	for _, d := range []string{"home", "ws", "run", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mcpgen.toml"), []byte(startupManifest(floor)), 0o644); err != nil {
		b.Fatal(err)
	}
	env := startupEnv(dir)
	launched := sync.OnceValue(func() error { return startLauncher(b, bin, dir, env) })

	version := startupCase{args: []string{"version"}}
	answer := startupCase{args: []string{"answer"}, answer: true}
	for _, bc := range []struct {
		name          string
		mcpgen, floor startupCase
		// launcher: the case needs a launcher running for the workspace
		launcher bool
	}{
		{"version", startupCase{args: []string{"--version"}}, version, false},
		// A command server: mcpgen loads the manifest and execs the
		// floor, which answers.
		{"serve-command", startupCase{args: []string{"serve", "floor"}, answer: true}, answer, false},
		{"serve-builtin", startupCase{args: []string{"serve", "files"}, answer: true}, answer, false},
		{"serve-declared", startupCase{args: []string{"serve", "git"}, answer: true}, answer, false},
		// No launcher runs for the workspace: connect fails.
		{"connect-none", startupCase{args: []string{"connect", "--no-start", "--workspace", "none", "files"}, exit: exitFail}, version, false},
		// The launcher answers, connect having handed it stdin and stdout.
		{"connect", startupCase{args: []string{"connect", "--no-start", "--workspace", "bench", "files"}, answer: true}, answer, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.launcher {
				if err := launched(); err != nil {
					b.Fatal(err)
				}
			}
			var floors, depss, mcpgens, bases []startTime
			measure := func(bin string, c startupCase, into *[]startTime) {
				t, err := startOnce(bin, c, dir, env)
				if err != nil {
					b.Fatal(err)
				}
				*into = append(*into, t)
			}
			for b.Loop() {
				measure(floor, bc.floor, &floors)
				measure(deps, bc.floor, &depss)
				measure(bin, bc.mcpgen, &mcpgens)
				if base != "" {
					measure(base, bc.mcpgen, &bases)
				}
			}
			report := func(name string, ts []startTime) {
				wall, cpu := medians(ts)
				fwall, fcpu := medians(floors)
				b.ReportMetric(ms(wall), name+"-ms")
				b.ReportMetric(ms(cpu), name+"-cpu-ms")
				if name != "floor" {
					b.ReportMetric(float64(wall)/float64(fwall), name+"-x")
					b.ReportMetric(float64(cpu)/float64(fcpu), name+"-cpu-x")
				}
			}
			report("floor", floors)
			report("deps", depss)
			report("mcpgen", mcpgens)
			if base != "" {
				report("base", bases)
			}
		})
	}
}

// startLauncher starts mcpgen launch for the workspace bench, and waits
// until connect reaches its files server. The launcher is stopped when the
// benchmark ends.
func startLauncher(b *testing.B, bin, dir string, env []string) error {
	log, err := os.Create(filepath.Join(dir, "launch.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(bin, "launch", "--workspace", "bench", "--log-format", "text")
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	var waitErr error
	done := make(chan struct{})
	go func() { // ends when the launcher exits
		waitErr = cmd.Wait()
		close(done)
	}()
	b.Cleanup(func() {
		stop := exec.Command(bin, "stop", "--workspace", "bench")
		stop.Dir, stop.Env = dir, env
		_ = stop.Run()
		select {
		case <-done:
		case <-time.After(startupWait):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	connect := startupCase{args: []string{"connect", "--no-start", "--workspace", "bench", "files"}, answer: true}
	deadline := time.Now().Add(startupWait)
	for {
		_, err := startOnce(bin, connect, dir, env)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log.Name())
			return fmt.Errorf("the launcher did not answer within %s: %v\n%s", startupWait, err, out)
		}
		select {
		case <-done:
			out, _ := os.ReadFile(log.Name())
			return fmt.Errorf("the launcher exited: %v\n%s", waitErr, out)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// medians returns the median wall and processor times of ts.
func medians(ts []startTime) (wall, cpu time.Duration) {
	w := make([]time.Duration, len(ts))
	c := make([]time.Duration, len(ts))
	for i, t := range ts {
		w[i], c[i] = t.wall, t.cpu
	}
	slices.Sort(w)
	slices.Sort(c)
	return w[len(w)/2], c[len(c)/2]
}

// initAllowance is how many allocations one of mcpgen's packages may make
// at init: sentinel errors, a closed channel, the shells of its lazy
// regexps (one each); not a table or a compiled regexp, which are built
// when first used (sync.OnceValue, lazyregexp), so that a process pays
// only for what its command uses. Before they were, manifest's init made
// some 4,000 allocations and main's 1,800.
const initAllowance = 16

// An initTrace is one line of GODEBUG=inittrace=1: one package's init.
type initTrace struct {
	pkg           string
	bytes, allocs int
}

// traceInit runs bin with args and GODEBUG=inittrace=1, and returns the
// inits it traced.
func traceInit(t *testing.T, bin string, args ...string) []initTrace {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	var inits []initTrace
	for line := range strings.Lines(stderr.String()) {
		// init PKG @0.43 ms, 0.28 ms clock, 288320 bytes, 4000 allocs
		var it initTrace
		var at, clock float64
		if _, err := fmt.Sscanf(line, "init %s @%g ms, %g ms clock, %d bytes, %d allocs", &it.pkg, &at, &clock, &it.bytes, &it.allocs); err == nil {
			inits = append(inits, it)
		}
	}
	if len(inits) == 0 {
		t.Fatalf("%s %s with GODEBUG=inittrace=1 traced no init:\n%s", bin, strings.Join(args, " "), stderr.String())
	}
	return inits
}

// TestInitIsCheap guards the start of every mcpgen process (every agent
// waits for one per server): Go runs every package's init before main,
// whatever the command, so mcpgen's packages leave their tables and
// regexps for first use. Counted in allocations, which do not depend on
// the machine's load as times do.
func TestInitIsCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures start-up: run without -short")
	}
	bin, err := buildMcpgen()
	if err != nil {
		t.Fatal(err)
	}
	ours := 0
	for _, it := range traceInit(t, bin, "--version") {
		if it.pkg != "main" && !strings.HasPrefix(it.pkg, "github.com/mcpgen/mcpgen/") {
			continue
		}
		ours++
		if it.allocs > initAllowance {
			t.Errorf("%s makes %d allocations (%d bytes) at init, want at most %d: build its tables and regexps on first use", it.pkg, it.allocs, it.bytes, initAllowance)
		}
	}
	if ours == 0 {
		t.Fatal("no init of mcpgen's own packages was traced")
	}
}

// TestCommandNames holds the names in commands() to the commands they
// build: a wrong one would leave its command out of the lines that name it.
func TestCommandNames(t *testing.T) {
	for _, c := range (&app{}).commands() {
		if got := c.build().Name(); got != c.name {
			t.Errorf("commands() calls %q the command named %q", c.name, got)
		}
	}
}

// TestRootBuildsWhatRuns: the lines that agents run build their command
// only, and what needs every command gets them all.
func TestRootBuildsWhatRuns(t *testing.T) {
	all := len((&app{}).commands())
	for _, tt := range []struct {
		args []string
		want []string // nil: every command
	}{
		{[]string{"serve", "files"}, []string{"serve"}},
		{[]string{"--manifest", "/srv/mcpgen.toml", "serve", "files"}, []string{"serve"}},
		{[]string{"-m", "serve", "connect", "--workspace", "ws-1", "git"}, []string{"connect"}},
		{[]string{"connect", "--workspace", "ws-1", "git"}, []string{"connect"}},
		{[]string{"tools", "ls", "--workspace", "ws-1"}, []string{"tools"}},
		{nil, nil},
		{[]string{"--version"}, nil},
		{[]string{"help", "serve"}, nil},
		{[]string{"completion", "bash"}, nil},
		{[]string{"serv", "files"}, nil},
		{[]string{"--", "serve"}, nil},
	} {
		var got []string
		for _, c := range (&app{}).rootCommand(tt.args).Commands() {
			got = append(got, c.Name())
		}
		if tt.want == nil && len(got) != all || tt.want != nil && !slices.Equal(got, tt.want) {
			t.Errorf("mcpgen %s builds %q, want %q (nil: all %d)", strings.Join(tt.args, " "), got, tt.want, all)
		}
	}
}

// TestRootAsNeededSaysTheSame: a command line gets the same output and
// exit status from the commands it builds as from all of them: help,
// usage errors and flag errors, with the root's flags before the command
// or not.
func TestRootAsNeededSaysTheSame(t *testing.T) {
	lines := [][]string{
		{"--version"}, {"--help"}, {"serv"}, {"serv", "--workspace", "x"}, {"--bogus", "serve"},
		{"serve"}, {"serve", "a", "b"}, {"tools"}, {"tools", "lss"}, {"tools", "ls", "--help"},
		{"help", "serve"}, {"--manifest=x.toml", "serve", "--help"}, {"--manifest", "serve", "connect"},
		{"--demo", "--manifest", "x.toml", "validate"}, {"connect", "--servers", "a", "b"},
		{"--help", "serve"}, {"-h", "serve", "x"}, {"--demo", "serve", "--help"}, {"-m", "x.toml", "serve"},
		{"-m=x.toml", "validate"}, {"-mx.toml", "validate"}, {"--workspace", "ws", "connect", "--help"},
		{"-w", "ws", "connect", "--help"}, {"--demo=true", "validate", "--help"}, {"-", "serve"}, {"", "serve"}, {"-=", "x", "serve"},
		{"stop", "--all", "--workspace", "x"}, {"emit", "--provider", "nope", "--demo"},
	}
	for _, c := range (&app{}).commands() {
		lines = append(lines,
			[]string{c.name, "--help"},
			[]string{c.name, "--no-such-flag"},
			[]string{"--demo", c.name, "--help"},
			[]string{"-m", "x.toml", c.name, "-h"},
		)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	t.Setenv("MCPGEN_CEILING_DIRECTORIES", filepath.Dir(dir))
	t.Setenv("MCPGEN_WORKSPACE", "")
	exec := func(all bool, args []string) string {
		var out, errs bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errs}
		root := a.rootCommand(args)
		if all {
			root = a.rootCommand(nil)
		}
		code := a.execute(root, args)
		return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	for _, args := range lines {
		if got, want := exec(false, args), exec(true, args); got != want {
			t.Errorf("mcpgen %s, from the commands it builds:\n%s\nwant, as from all of them:\n%s", strings.Join(args, " "), got, want)
		}
	}
}
