package httpauth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
)

// Tokens of the tests: long enough, of the form of a bearer token.
const (
	tokA = "tok-a-0123456789abcdef"
	tokB = "tok-b-0123456789abcdef"
	tokC = "tok-c-0123456789abcdef"
	tokD = "tok-d-0123456789abcdef" // the same length as the others
)

// loadAuth parses a manifest of dir with [session.auth] auth and loads it,
// with env as the environment.
func loadAuth(t *testing.T, dir, auth string, env map[string]string) (*Config, error) {
	t.Helper()
	m, err := manifest.Parse([]byte("[session.auth]\n"+auth), filepath.Join(dir, "mcpgen.toml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	return Load(m, func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
}

func TestBearerTokenEnv(t *testing.T) {
	c, err := loadAuth(t, t.TempDir(), "token_env = \"MCPGEN_TOKEN\"\n", map[string]string{"MCPGEN_TOKEN": tokA})
	if err != nil {
		t.Fatal(err)
	}
	a, _, lg := newAuth(t, c)
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"the token", tokA, 200},
		{"another", tokB, 401},
		{"its prefix", tokA[:len(tokA)-1], 401},
		{"more than it", tokA + "0", 401},
		{"a JWT, with no issuer", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := do(a, "/mcp", "Bearer "+tc.token)
			if got.status != tc.want {
				t.Fatalf("got %d %q, want %d", got.status, got.challenge, tc.want)
			}
			switch {
			case tc.want == 200 && !got.id.Bearer:
				t.Errorf("identity: got %+v, want a bearer's", got.id)
			case tc.want == 401 && got.challenge != `Bearer realm="mcpgen", error="invalid_token", error_description="the token is not one this launcher admits"`:
				// Without an issuer there is no metadata to name.
				t.Errorf("WWW-Authenticate: got %q", got.challenge)
			}
		})
	}
	if got := do(a, "/mcp"); got.status != 401 || got.challenge != `Bearer realm="mcpgen"` {
		t.Errorf("no token: got %d %q", got.status, got.challenge)
	}
	checkNoToken(t, lg.String(), []string{tokA, tokB})
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bad"), "# tokens\n"+tokA+"\nshort\n\n"+tokB+" # mine\n")
	for _, tc := range []struct {
		name, auth string
		env        map[string]string
		want       string
	}{
		{"unset", "token_env = \"T\"\n", nil, "mcpgen.toml:2:13: [session.auth] token_env: T is not set or empty: export it"},
		{"empty", "token_env = \"T\"\n", map[string]string{"T": ""}, "T is not set or empty"},
		{"short", "token_env = \"T\"\n", map[string]string{"T": "hunter2"}, "the value of T has 7 characters: a token needs 16 at least"},
		{"not a token", "token_env = \"T\"\n", map[string]string{"T": "a very long secret phrase"}, "the value of T is not a bearer token"},
		{"missing file", "tokens_file = \"none\"\n", nil, "mcpgen.toml:2:15: [session.auth] tokens_file: open " + filepath.Join(dir, "none")},
		{"bad lines", "tokens_file = \"bad\"\n", nil, filepath.Join(dir, "bad") + ":3: the line has 5 characters"},
		{"a comment after a token", "tokens_file = \"bad\"\n", nil, filepath.Join(dir, "bad") + ":5: the line is not a bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadAuth(t, dir, tc.auth, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			for _, secret := range []string{"hunter2", "secret phrase", "short"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error says the token: %v", err)
				}
			}
		})
	}
	if c, err := Load(&manifest.Manifest{}, nil); c != nil || err != nil {
		t.Errorf("no [session.auth]: got %v, %v", c, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTokensFile: the tokens file is read again when it changes, however
// it changes: written in place, replaced by a rename, its size and time
// alike, removed and put back; a bad line is left out, the others kept.
func TestTokensFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	writeFile(t, path, "# the agents\n\n  "+tokA+"  \n"+tokB+"\n")
	c, err := loadAuth(t, dir, "tokens_file = \"tokens\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _, lg := newAuth(t, c)
	admits := func(want ...string) {
		t.Helper()
		for _, tok := range []string{tokA, tokB, tokC, tokD} {
			wantOK := false
			for _, w := range want {
				wantOK = wantOK || w == tok
			}
			if got := do(a, "/mcp", "Bearer "+tok); (got.status == 200) != wantOK {
				t.Fatalf("token %s: got %d, want admitted %v\nlog:\n%s", tok[:5], got.status, wantOK, lg)
			}
		}
	}
	admits(tokA, tokB)

	// Written in place: another size.
	writeFile(t, path, tokC+"\n")
	admits(tokC)

	// Replaced by a rename, with the same size and the same time: the
	// file itself is another.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(dir, "tokens.new")
	writeFile(t, next, tokD+"\n")
	if err := os.Chtimes(next, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	admits(tokD)

	// Written in place with the same size: the time tells.
	fi, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, tokA+"\n")
	if err := os.Chtimes(path, fi.ModTime().Add(time.Second), fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	admits(tokA)

	// Removed: no one; back: its tokens.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	admits()
	writeFile(t, path, tokB+"\n")
	admits(tokB)

	// A bad line: left out, and logged with its line, not its content.
	writeFile(t, path, tokA+"\nshort-one\n"+tokC+"\n")
	admits(tokA, tokC)
	if out := lg.String(); !strings.Contains(out, "tokens:2: the line has 9 characters") || strings.Contains(out, "short-one") {
		t.Errorf("the bad line is not logged as it should be:\n%s", out)
	}
	// Emptied: no one.
	writeFile(t, path, "# revoked all\n")
	admits()
	checkNoToken(t, lg.String(), []string{tokA, tokB, tokC, tokD})
}

// TestTokensFileBounds: a tokens file too big admits no one, rather than
// hold the request while it is read.
func TestTokensFileBounds(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	writeFile(t, path, strings.Repeat(tokA+"\n", maxTokensFileSize/len(tokA)+1))
	if _, err := loadAuth(t, dir, "tokens_file = \"tokens\"\n", nil); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("got %v, want the file refused as too long", err)
	}
	writeFile(t, path, strings.Repeat(tokA+"\n", maxTokens+1))
	if _, err := loadAuth(t, dir, "tokens_file = \"tokens\"\n", nil); err == nil || !strings.Contains(err.Error(), "more than 10000 tokens") {
		t.Errorf("got %v, want the file refused for its number of tokens", err)
	}
}

func TestMatches(t *testing.T) {
	set := []digest{digestOf(tokA), digestOf(tokB)}
	for tok, want := range map[string]bool{tokA: true, tokB: true, tokC: false, "": false, tokA + tokB: false} {
		if got := matches(set, tok); got != want {
			t.Errorf("matches(%q): got %v, want %v", tok, got, want)
		}
	}
	if matches(nil, tokA) {
		t.Error("an empty set matches")
	}
}

func TestB64Token(t *testing.T) {
	for tok, want := range map[string]bool{
		"abc": true, "a-b.c_d~e+f/g": true, "abc==": true, "abc=d": false, "=": false, "": false,
		"a b": false, "a\"b": false, "ab,c": false, "é": false,
	} {
		if got := b64token(tok); got != want {
			t.Errorf("b64token(%q): got %v, want %v", tok, got, want)
		}
	}
}
