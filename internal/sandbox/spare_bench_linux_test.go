package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkSpawn is what the sandbox adds to a start, from the moment a
// start is asked for to the moment the program runs (its first byte on
// stdout, from /bin/echo), side by side: no sandbox, a sandbox prepared
// for the start (its setup step, the test binary standing in for mcpgen,
// started then), and one whose setup step is a spare, started ahead. The
// policy: no network (Landlock, and PID, mount and network namespaces
// where the kernel allows).
//
//	go test -run '^$' -bench Spawn ./internal/sandbox
func BenchmarkSpawn(b *testing.B) {
	echo, err := exec.LookPath("echo")
	if err != nil {
		b.Skip("no echo")
	}
	ws := b.TempDir()
	p := &Policy{Write: []string{ws}, Network: Network{Mode: NetNone}}
	spares := NewSpares(nil)
	defer spares.Close()
	spawn := func(b *testing.B, way string) {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		cmd := exec.Command(echo, "x")
		cmd.Env, cmd.Stdout = os.Environ(), w
		if way == "warm" {
			b.StopTimer()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := spares.Ready(ctx, p)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		var s *Setup
		switch way {
		case "off":
			err = cmd.Start()
		case "cold":
			if s, err = Prepare(cmd, p); err == nil {
				err = cmd.Start()
			}
		case "warm":
			sp := spares.Take(cmd, p)
			if s, err = sp.Run(cmd); err == nil {
				cmd = sp.Cmd()
			}
		}
		w.Close()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = cmd.Wait()
		s.Close()
		b.StartTimer()
	}
	for _, way := range []string{"off", "cold", "warm"} {
		b.Run(way, func(b *testing.B) {
			for b.Loop() {
				spawn(b, way)
			}
		})
	}
}
