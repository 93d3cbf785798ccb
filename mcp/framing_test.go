package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	json "github.com/goccy/go-json"
)

// readAll reads lines until an error other than ErrLineTooLong, recording
// each line, "!too long: PREFIX" for overlong ones, and the final error.
func readAll(r *Reader) []string {
	var got []string
	for {
		line, err := r.ReadLine()
		switch {
		case errors.Is(err, ErrLineTooLong):
			got = append(got, "!too long: "+string(line))
		case err != nil:
			return append(got, "!"+err.Error())
		default:
			got = append(got, string(line))
		}
	}
}

func TestReadLine(t *testing.T) {
	const max = 10
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"lines", "a\nbc\n", []string{"a", "bc", "!EOF"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b", "!EOF"}},
		{"last line without newline", "a\nb", []string{"a", "b", "!EOF"}},
		{"blank lines", "\n\n  \n\r\n\t\r\na\n \n", []string{"a", "!EOF"}},
		{"empty", "", []string{"!EOF"}},
		{"lone cr stays", "a\rb\n", []string{"a\rb", "!EOF"}},
		{"exactly the cap", "0123456789\n0123456789\r\n", []string{"0123456789", "0123456789", "!EOF"}},
		{"one over", "0123456789X\nok\n", []string{"!too long: 0123456789", "ok", "!EOF"}},
		{"one over with crlf", "0123456789X\r\nok\n", []string{"!too long: 0123456789", "ok", "!EOF"}},
		{"over, across buffers", strings.Repeat("x", 100) + "\nok\n" + strings.Repeat("y", 50) + "\n", []string{"!too long: xxxxxxxxxx", "ok", "!too long: yyyyyyyyyy", "!EOF"}},
		{"over at the end", "0123456789XYZ", []string{"!too long: 0123456789", "!EOF"}},
		{"over at the end, across buffers", strings.Repeat("z", 40), []string{"!too long: zzzzzzzzzz", "!EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A buffer smaller than the cap, so that lines span reads.
			for _, bufSize := range []int{16, 4096} {
				got := readAll(newReader(strings.NewReader(tt.in), max, bufSize))
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("buffer %d: got %q, want %q", bufSize, got, tt.want)
				}
				got = readAll(newReader(iotest.OneByteReader(strings.NewReader(tt.in)), max, bufSize))
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("buffer %d, one byte at a time: got %q, want %q", bufSize, got, tt.want)
				}
			}
		})
	}
}

func TestReadLineError(t *testing.T) {
	boom := errors.New("boom")
	r := newReader(io.MultiReader(strings.NewReader("ok\nhalf a li"), iotest.ErrReader(boom)), 10, 16)
	if line, err := r.ReadLine(); string(line) != "ok" || err != nil {
		t.Fatalf("ReadLine = %q, %v; want ok", line, err)
	}
	// Half a line is not a line.
	if line, err := r.ReadLine(); line != nil || !errors.Is(err, boom) {
		t.Fatalf("ReadLine = %q, %v; want nil, boom", line, err)
	}
}

func TestReadLineOwnsNothing(t *testing.T) {
	r := NewReader(strings.NewReader("first\nsecond\n"))
	a, _ := r.ReadLine()
	b, _ := r.ReadLine()
	if string(a) != "first" || string(b) != "second" {
		t.Fatalf("lines = %q, %q: a later read changed an earlier line", a, b)
	}
}

// endless is an input of one endless line.
type endless struct{ left int }

func (e *endless) Read(p []byte) (int, error) {
	if e.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), e.left)
	for i := range p[:n] {
		p[i] = 'x'
	}
	e.left -= n
	return n, nil
}

func TestReadLineBoundsMemory(t *testing.T) {
	const total = 4 * MaxLineSize
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := NewReader(&endless{left: total})
	line, err := r.ReadLine()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLineTooLong) || len(line) != MaxLineSize {
		t.Fatalf("ReadLine = %d bytes, %v; want %d bytes, ErrLineTooLong", len(line), err, MaxLineSize)
	}
	// The prefix is kept, the rest is not: well under the input's size.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*MaxLineSize {
		t.Errorf("allocated %d bytes for a %d byte line; want at most %d", alloc, total, 3*MaxLineSize)
	}
	if _, err := r.ReadLine(); err != io.EOF {
		t.Errorf("next ReadLine: %v, want EOF", err)
	}
}

func TestReaderRead(t *testing.T) {
	r := NewReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\nnope\n"))
	msg, err := r.Read()
	if err != nil || msg.Method != "ping" || msg.ID != Int64ID(1) {
		t.Fatalf("Read = %s, %v", dump(msg), err)
	}
	var derr *DecodeError
	if _, err = r.Read(); !errors.As(err, &derr) || derr.Err.Code != CodeParseError {
		t.Fatalf("Read of garbage: %v, want a parse error", err)
	}
	if _, err := r.Read(); err != io.EOF {
		t.Fatalf("Read at the end: %v, want EOF", err)
	}

	long := fmt.Sprintf(`{"jsonrpc":"2.0","id":"big","method":"m","params":{"x":"%s"}}`, strings.Repeat("x", 100))
	r = newReader(strings.NewReader(long+"\n"+`{"id":3,"result":{"x":"`+strings.Repeat("y", 100)+`"}}`), 50, 16)
	_, err = r.Read()
	if !errors.As(err, &derr) || !errors.Is(err, ErrLineTooLong) || derr.ID != StringID("big") || !derr.Reply ||
		derr.Err.Code != CodeInvalidRequest || derr.Err.Message != "invalid request: line longer than 50 bytes" {
		t.Fatalf("Read of a long request = %v (%+v)", err, derr)
	}
	if _, err = r.Read(); !errors.As(err, &derr) || !errors.Is(err, ErrLineTooLong) || derr.ID != Int64ID(3) || derr.Reply {
		t.Fatalf("Read of a long response = %v (%+v)", err, derr)
	}
}

// callRecorder records each Write call.
type callRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (w *callRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func TestWriterConcurrent(t *testing.T) {
	rec := &callRecorder{}
	w := NewWriter(rec)
	const goroutines, each = 8, 100
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				params := json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d,"pad":"%s"}`, g, i, strings.Repeat("p", i*10)))
				var err error
				if i%2 == 0 {
					err = w.Write(&Message{Method: "m", Params: params})
				} else {
					err = w.WriteLine((&Message{Method: "m", Params: params}).AppendJSON(nil))
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(rec.calls) != goroutines*each {
		t.Fatalf("%d Write calls, want %d", len(rec.calls), goroutines*each)
	}
	for _, call := range rec.calls {
		// One whole message per call, ending with its newline.
		if strings.Count(call, "\n") != 1 || !strings.HasSuffix(call, "\n") {
			t.Fatalf("Write call %q is not one line", call)
		}
		if _, err := DecodeMessage([]byte(call[:len(call)-1])); err != nil {
			t.Fatalf("Write call %q: %v", call, err)
		}
	}
}

func TestWriterKeepsOneLine(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	indented := json.RawMessage("{\n  \"a\": \"x\\ny\"\n}")
	if err := w.Write(&Message{ID: Int64ID(1), Result: indented}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteLine([]byte("{\"jsonrpc\":\"2.0\",\n\"method\":\"m\"}")); err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"result":{   "a": "x\ny" }}` + "\n" + `{"jsonrpc":"2.0", "method":"m"}` + "\n"
	if buf.String() != want {
		t.Errorf("wrote\n%q\nwant\n%q", buf.String(), want)
	}
	if string(indented) != "{\n  \"a\": \"x\\ny\"\n}" {
		t.Errorf("Write modified the caller's params: %q", indented)
	}
}

type failingWriter struct {
	n   int // bytes accepted per call
	err error
}

func (w *failingWriter) Write(p []byte) (int, error) { return min(w.n, len(p)), w.err }

func TestWriterErrorsStick(t *testing.T) {
	boom := errors.New("broken pipe")
	fw := &failingWriter{err: boom}
	w := NewWriter(fw)
	if err := w.Write(&Message{Method: "m"}); !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want boom", err)
	}
	fw.err = nil
	fw.n = 1 << 20
	if err := w.Write(&Message{Method: "m"}); !errors.Is(err, boom) {
		t.Fatalf("Write after a failure = %v, want boom again", err)
	}

	short := NewWriter(&failingWriter{n: 2})
	if err := short.WriteLine([]byte(`{}`)); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("short write: %v, want io.ErrShortWrite", err)
	}
}
