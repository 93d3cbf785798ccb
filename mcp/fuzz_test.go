package mcp

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

var messageSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"a\u0062\ud83d\ude00","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"x"}}`,
	`{"jsonrpc":"2.0","id":1.0,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error","data":[1,{"a":null}]}}`,
	`{"jsonrpc":"2.0","id":-0,"error":{"code":1e2,"message":"\u0000\t"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":null,"x":[true,false,-1.5e-3]}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m"`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}",
	` { "jsonrpc" : "2.0" , "id" : 9007199254740993 , "result" : { } } `,
	`{"jsonrpc":"2.0","id":{},"method":"m"}`,
	`"just a string"`,
	`nul`,
	``,
	"0\x00",
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, err := DecodeMessage(line)
		valid := stdjson.Valid(line)

		// The syntax check agrees with encoding/json's.
		var derr *DecodeError
		isParseError := errors.As(err, &derr) && derr.Err.Code == CodeParseError
		if err != nil && !errors.As(err, &derr) {
			t.Fatalf("error %v is not a *DecodeError", err)
		}
		if valid == isParseError && !strings.Contains(fmt.Sprint(err), "max depth") {
			t.Fatalf("encoding/json says valid=%v; DecodeMessage says %v", valid, err)
		}
		if err != nil {
			if derr.Err.Code != CodeParseError && derr.Err.Code != CodeInvalidRequest {
				t.Fatalf("error code %d", derr.Err.Code)
			}
			return
		}

		// What decodes re-encodes to valid JSON that decodes the same.
		enc := msg.AppendJSON(nil)
		if !stdjson.Valid(enc) || bytes.IndexByte(enc, '\n') >= 0 && !bytes.Contains(line, []byte("\n")) {
			t.Fatalf("%q re-encodes to %q", line, enc)
		}
		again, err := DecodeMessage(enc)
		if err != nil {
			t.Fatalf("%q re-encodes to %q, which does not decode: %v", line, enc, err)
		}
		if !equalMessages(again, msg) {
			t.Fatalf("%q re-encodes to %q, which decodes differently:\n%s\n%s", line, enc, dump(msg), dump(again))
		}
		kinds := 0
		for _, is := range []bool{msg.IsRequest(), msg.IsNotification(), msg.IsResponse()} {
			if is {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("%q is %d kinds of message", line, kinds)
		}
	})
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"a\nb\n",
		"a\r\nb",
		"\n\n \r\n\t\n",
		"0123456789abcdef\nshort\n0123456789abcdef0123456789abcdef",
		"x\r\r\n\r",
		messageSeeds[0] + "\n" + messageSeeds[1],
	} {
		f.Add([]byte(s), uint8(10))
	}
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		maxLine := 1 + int(n)%40
		for _, bufSize := range []int{16, 64} {
			got := readAll(newReader(bytes.NewReader(data), maxLine, bufSize))
			want := referenceLines(data, maxLine)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("max %d, buffer %d, input %q:\n got %q\nwant %q", maxLine, bufSize, data, got, want)
			}
			for _, line := range got[:len(got)-1] { // the last one is the error
				if len(strings.TrimPrefix(line, "!too long: ")) > maxLine {
					t.Fatalf("line %q is over the cap of %d", line, maxLine)
				}
			}
		}
	})
}

// referenceLines is what readAll should return, computed the slow way.
func referenceLines(data []byte, maxLine int) []string {
	var out []string
	parts := strings.Split(string(data), "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	for _, p := range parts {
		p = strings.TrimSuffix(p, "\r")
		switch {
		case len(p) > maxLine:
			out = append(out, "!too long: "+p[:maxLine])
		case strings.Trim(p, " \t\r") == "":
		default:
			out = append(out, p)
		}
	}
	return append(out, "!EOF")
}
