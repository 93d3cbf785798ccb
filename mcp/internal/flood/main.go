// Command flood measures what an unread flood costs a stdio MCP server: it
// writes N pings to the server's stdin while never reading its stdout, waits
// until the server stops taking input (or has taken all of it), and reports
// the server's resident memory then and at its peak. Then it reads the
// output and checks that every ping it wrote was answered. It is not part of
// mcpgen; mcp/testdata/bench.sh runs it against two revisions of mcpgen serve.
//
//	flood [-n 200000] [-settle 2s] -- CMD [ARGS...]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"
)

func main() {
	n := flag.Int("n", 200000, "how many pings to write")
	settle := flag.Duration("settle", 2*time.Second, "how long the input must stay stuck (or the memory still) before measuring")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: flood [-n N] [-settle D] -- CMD [ARGS...]")
		os.Exit(2)
	}
	if err := run(*n, *settle, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

// report is what flood prints, as one JSON object.
type report struct {
	Pings       int     `json:"pings"`
	Taken       int64   `json:"takenBeforeMeasure"` // pings the server's stdin took before the measure
	RSSMB       float64 `json:"rssMB"`              // VmRSS at the measure
	PeakMB      float64 `json:"peakMB"`             // VmHWM at the measure
	Answered    int     `json:"answered"`
	DrainMillis int64   `json:"drainMs"`
}

func run(n int, settle time.Duration, argv []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	// The writer: one ping per line, in chunks of 64 lines. It blocks when
	// the server stops reading, and ends when all is written or stdin is
	// closed. taken counts the pings of the chunks written whole: what the
	// pipe and the server have taken.
	var taken atomic.Int64
	written := make(chan error, 1)
	go func() {
		const chunk = 64
		var buf []byte
		for i := 1; i <= n; i++ {
			buf = append(buf, `{"jsonrpc":"2.0","id":`...)
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, `,"method":"ping"}`+"\n"...)
			if i%chunk == 0 || i == n {
				if _, err := stdin.Write(buf); err != nil {
					written <- err
					return
				}
				taken.Store(int64(i))
				buf = buf[:0]
			}
		}
		written <- nil
	}()

	// Wait for the input to stall, or for everything to be written and the
	// memory to stop growing.
	var rep report
	rep.Pings = n
	last, lastRSS, still := int64(-1), -1.0, time.Duration(0)
	const tick = 100 * time.Millisecond
	for still < settle {
		time.Sleep(tick)
		rss, _, err := memory(cmd.Process.Pid)
		if err != nil {
			return err
		}
		if t := taken.Load(); t != last || rss != lastRSS {
			last, lastRSS, still = t, rss, 0
			continue
		}
		still += tick
	}
	rep.Taken = last
	if rep.RSSMB, rep.PeakMB, err = memory(cmd.Process.Pid); err != nil {
		return err
	}

	// Drain: every ping must be answered.
	start := time.Now()
	r := bufio.NewReaderSize(stdout, 64<<10)
	for rep.Answered < n {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("after %d answers: %w", rep.Answered, err)
		}
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &msg) != nil || string(msg.Result) != "{}" {
			return fmt.Errorf("not a ping's answer: %q", line)
		}
		rep.Answered++
	}
	rep.DrainMillis = time.Since(start).Milliseconds()
	if err := <-written; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	_ = stdin.Close()
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	return nil
}
