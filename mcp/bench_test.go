package mcp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

// BenchmarkDecodeEncode is the hub's hot path: decode a small request and
// encode it again (with another id, as the hub does).
func BenchmarkDecodeEncode(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	var buf []byte
	for i := 0; b.Loop(); i++ {
		msg, err := DecodeMessage(line)
		if err != nil {
			b.Fatal(err)
		}
		msg.ID = Int64ID(int64(i))
		buf = msg.AppendJSON(buf[:0])
	}
}

// BenchmarkDecodeEncodeLarge passes a 1 MiB tool result through.
func BenchmarkDecodeEncodeLarge(b *testing.B) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"%s"}]}}`,
		strings.Repeat(`some file contents with \"quotes\" and \\n escapes `, 1<<20/50)))
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	var buf []byte
	for b.Loop() {
		msg, err := DecodeMessage(line)
		if err != nil {
			b.Fatal(err)
		}
		buf = msg.AppendJSON(buf[:0])
	}
}

// BenchmarkServerEcho is one tools/call round trip from a Client to a
// Server over in-memory pipes.
func BenchmarkServerEcho(b *testing.B) {
	s := testServer(b, &ServerOptions{Logger: discardLogger()})
	p := newPipes()
	ctx := context.Background()
	served := serve(ctx, s, p)
	c := NewClient(ctx, p.clientR, p.clientW, ClientOptions{})
	defer func() {
		c.Close()
		<-c.Done()
		<-served
	}()
	if _, err := c.Initialize(ctx); err != nil {
		b.Fatal(err)
	}
	args := map[string]string{"text": "hello, world"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerEchoParallel keeps many calls in flight on one connection.
func BenchmarkServerEchoParallel(b *testing.B) {
	s := testServer(b, &ServerOptions{Logger: discardLogger()})
	p := newPipes()
	ctx := context.Background()
	served := serve(ctx, s, p)
	c := NewClient(ctx, p.clientR, p.clientW, ClientOptions{})
	defer func() {
		c.Close()
		<-c.Done()
		<-served
	}()
	args := map[string]string{"text": "hello, world"}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.CallTool(ctx, "echo", args); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkServerRoundTrip is one request answered over OS pipes, as a
// stdio server is driven by its client: write a line, read the answer.
// ping is answered on the read loop; tools/call runs in a goroutine of its
// own, with a context its peer can cancel.
func BenchmarkServerRoundTrip(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"tools_list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"tools_call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"}}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := testServer(b, &ServerOptions{Logger: discardLogger()})
			inR, inW, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			outR, outW, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- s.Serve(context.Background(), inR, outW) }()
			defer func() {
				inW.Close()
				if err := <-served; err != nil {
					b.Error(err)
				}
				inR.Close()
				outW.Close()
				outR.Close()
			}()
			line := []byte(bc.line + "\n")
			answers := bufio.NewReader(outR)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := inW.Write(line); err != nil {
					b.Fatal(err)
				}
				if _, err := answers.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConnGo is the hub's forward: a request with raw params sent
// with Go, its raw result delivered to a callback on the read loop. The
// peer is a Conn that answers inline, over in-memory pipes.
func BenchmarkConnGo(b *testing.B) {
	p := newPipes()
	ctx := context.Background()
	answer := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"hello, world"}]}`), nil
	})
	server := NewConn(p.serverR, p.serverW, ConnOptions{Handler: answer, Inline: func(string) bool { return true }})
	client := NewConn(p.clientR, p.clientW, ConnOptions{})
	served, ran := make(chan error, 1), make(chan error, 1)
	go func() { served <- server.Run(ctx) }()
	go func() { ran <- client.Run(ctx) }()
	defer func() {
		client.Close()
		server.Close()
		<-served
		<-ran
	}()
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello, world"}}`)
	done := make(chan error, 1)
	then := func(result json.RawMessage, err error) { done <- err }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.Go(ctx, "tools/call", params, then); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
