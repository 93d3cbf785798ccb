package proc

import (
	"context"
	"os/exec"
	"sync"
	"testing"
)

// BenchmarkRun is what containment adds to one run of a short command (a
// declared tool's call): a container made, the command started in it,
// waited for, and the container closed; "exec" is os/exec alone.
func BenchmarkRun(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("true(1) not found")
	}
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(truePath).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []Mode{ModeGroups, ModeSubreaper, ModeCgroup} {
		b.Run(mode.String(), func(b *testing.B) {
			c, err := Setup(context.Background(), Options{Name: "bench", Mode: mode})
			if err != nil {
				b.Skipf("%s containment unavailable: %v", mode, err)
			}
			defer c.Close(context.Background())
			ctx := context.Background()
			for b.Loop() {
				k, err := c.New("true", Limits{})
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(truePath)
				if err := k.Start(cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				if err := k.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScan is one subreaper scan of /proc, which the subreaper does
// on each SIGCHLD and tick: its cost grows with the processes on the
// machine (reported as procs).
func BenchmarkScan(b *testing.B) {
	table, err := procTable()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(table)), "procs")
	for b.Loop() {
		table, err := procTable()
		if err != nil {
			b.Fatal(err)
		}
		_ = indexProcs(table)
	}
}

// BenchmarkProcess is one server's start and stop as the launcher does
// them (Start, then Stop: stdin closed, the process exits, its container
// is killed and closed), with cat for the server; "none" is a process
// group without a Containment, as before containers.
func BenchmarkProcess(b *testing.B) {
	catPath, err := exec.LookPath("cat")
	if err != nil {
		b.Skip("cat(1) not found")
	}
	run := func(b *testing.B, c *Containment) {
		ctx := context.Background()
		for b.Loop() {
			p, err := Start(&Spec{Path: catPath, Containment: c, Name: "srv"})
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Stop(ctx); err != nil {
				b.Fatal(err)
			}
			if err := p.CloseErr(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("none", func(b *testing.B) { run(b, nil) })
	for _, mode := range []Mode{ModeGroups, ModeSubreaper, ModeCgroup} {
		b.Run(mode.String(), func(b *testing.B) {
			c, err := Setup(context.Background(), Options{Name: "bench", Mode: mode})
			if err != nil {
				b.Skipf("%s containment unavailable: %v", mode, err)
			}
			defer c.Close(context.Background())
			run(b, c)
		})
	}
}

// BenchmarkStopMany is a launcher's stop of many servers at once: 100
// started (cat, as in BenchmarkProcess), then all stopped together; the
// time is per server, start included.
func BenchmarkStopMany(b *testing.B) {
	catPath, err := exec.LookPath("cat")
	if err != nil {
		b.Skip("cat(1) not found")
	}
	const n = 100
	for _, mode := range []Mode{ModeGroups, ModeSubreaper, ModeCgroup} {
		b.Run(mode.String(), func(b *testing.B) {
			c, err := Setup(context.Background(), Options{Name: "bench", Mode: mode})
			if err != nil {
				b.Skipf("%s containment unavailable: %v", mode, err)
			}
			defer c.Close(context.Background())
			for b.Loop() {
				ps := make([]*Process, n)
				for i := range ps {
					if ps[i], err = Start(&Spec{Path: catPath, Containment: c, Name: "srv"}); err != nil {
						b.Fatal(err)
					}
				}
				var wg sync.WaitGroup
				for _, p := range ps {
					wg.Go(func() {
						if err := p.Stop(context.Background()); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/server")
		})
	}
}
