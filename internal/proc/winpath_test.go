package proc

import (
	"errors"
	"io/fs"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeFS is a Windows file system for lookPathWindows: paths compare
// without regard to case, as NTFS's do.
type fakeFS struct {
	files, dirs []string
}

func (f fakeFS) stat(p string) (fs.FileInfo, error) {
	p = strings.ToLower(strings.ReplaceAll(p, "/", `\`))
	p = strings.ReplaceAll(p, `\.\`, `\`) // Windows reads C:\a\.\b as C:\a\b
	has := func(list []string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return strings.ToLower(s) == p })
	}
	switch {
	case has(f.files):
		return fakeInfo{dir: false}, nil
	case has(f.dirs):
		return fakeInfo{dir: true}, nil
	}
	return nil, fs.ErrNotExist
}

type fakeInfo struct{ dir bool }

func (i fakeInfo) Name() string       { return "" }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return 0 }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.dir }
func (i fakeInfo) Sys() any           { return nil }

func TestLookPathWindows(t *testing.T) {
	node := `C:\Program Files\nodejs`
	// What npm installs for npx: a shell script without an extension, a
	// batch file and a PowerShell script.
	npm := fakeFS{files: []string{node + `\npx`, node + `\npx.cmd`, node + `\npx.ps1`, node + `\node.exe`}}
	tests := []struct {
		name    string
		file    string
		dir     string
		env     []string
		fs      fakeFS
		want    string
		wantErr error
	}{
		{name: "npx is npx.cmd", file: "npx", env: []string{`PATH=C:\Windows;` + node}, fs: npm, want: node + `\npx.cmd`},
		{name: "Path in any case", file: "npx", env: []string{`Path=` + node}, fs: npm, want: node + `\npx.cmd`},
		{name: "the last PATH wins", file: "npx", env: []string{`PATH=C:\Windows`, `path=` + node}, fs: npm, want: node + `\npx.cmd`},
		{name: "an extension given", file: "node.exe", env: []string{`PATH=` + node}, fs: npm, want: node + `\node.exe`},
		{name: "ps1 is not in PATHEXT", file: "npx.ps1", env: []string{`PATH=` + node}, fs: npm, want: node + `\npx.ps1`},
		{
			name: "PATHEXT order", file: "tool", env: []string{`PATH=C:\bin`, `PATHEXT=.CMD;.EXE`},
			fs: fakeFS{files: []string{`C:\bin\tool.exe`, `C:\bin\tool.cmd`}}, want: `C:\bin\tool.cmd`,
		},
		{
			name: "PATHEXT without dots, with blanks", file: "tool", env: []string{`PATH=C:\bin`, `PATHEXT=;EXE;;`},
			fs: fakeFS{files: []string{`C:\bin\tool.exe`}}, want: `C:\bin\tool.exe`,
		},
		{
			name: "default PATHEXT", file: "tool", env: []string{`PATH=C:\bin`},
			fs: fakeFS{files: []string{`C:\bin\tool.bat`}}, want: `C:\bin\tool.bat`,
		},
		{
			name: "PATH order", file: "git", env: []string{`PATH=C:\a;C:\b`},
			fs: fakeFS{files: []string{`C:\b\git.exe`, `C:\a\git.cmd`}}, want: `C:\a\git.cmd`,
		},
		{
			name: "a quoted PATH entry with a semicolon", file: "tool", env: []string{`PATH="C:\odd;dir";C:\bin`},
			fs: fakeFS{files: []string{`C:\odd;dir\tool.exe`}}, want: `C:\odd;dir\tool.exe`,
		},
		{
			name: "a directory is not a program", file: "tool", env: []string{`PATH=C:\a;C:\b`},
			fs: fakeFS{dirs: []string{`C:\a\tool.exe`}, files: []string{`C:\b\tool.exe`}}, want: `C:\b\tool.exe`,
		},
		{
			name: "never the working directory", file: "tool", dir: `C:\work`, env: []string{`PATH=C:\bin`},
			fs: fakeFS{files: []string{`C:\work\tool.exe`}}, wantErr: exec.ErrNotFound,
		},
		{
			name: "never a relative PATH entry", file: "tool", env: []string{`PATH=.;bin;C:\x`},
			fs: fakeFS{files: []string{`.\tool.exe`, `bin\tool.exe`}}, wantErr: exec.ErrNotFound,
		},
		{name: "no PATH", file: "tool", fs: fakeFS{files: []string{`C:\bin\tool.exe`}}, wantErr: exec.ErrNotFound},
		{
			name: "a relative path, from the working directory", file: `bin\server`, dir: `C:\proj`,
			fs: fakeFS{files: []string{`C:\proj\bin\server.exe`}}, want: `C:\proj\bin\server.exe`,
		},
		{
			name: "a relative path with slashes", file: `./bin/server`, dir: `C:\proj\`,
			fs: fakeFS{files: []string{`C:\proj\bin\server.exe`}}, want: `C:\proj\./bin/server.exe`,
		},
		{
			name: "an absolute path gets its extension", file: `C:\tools\srv`,
			fs: fakeFS{files: []string{`C:\tools\srv.com`, `C:\tools\srv.exe`}}, want: `C:\tools\srv.com`,
		},
		{
			name: "an absolute path that is not there", file: `C:\tools\gone`, env: []string{`PATH=C:\tools`},
			fs: fakeFS{files: []string{`C:\tools\other.exe`}}, wantErr: fs.ErrNotExist,
		},
		{
			name: "an extension that is not a program's", file: "python3.12", env: []string{`PATH=C:\py`},
			fs: fakeFS{files: []string{`C:\py\python3.12.exe`}}, want: `C:\py\python3.12.exe`,
		},
	}
	for _, tt := range tests {
		got, err := lookPathWindows(tt.file, tt.dir, tt.env, tt.fs.stat)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: got %q, %v; want an error that is %v", tt.name, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestIsBatch(t *testing.T) {
	tests := map[string]bool{
		`C:\n\npx.cmd`: true, `C:\n\NPX.CMD`: true, `x.Bat`: true,
		`C:\n\node.exe`: false, `C:\x.cmd\tool.exe`: false, `C:\dir.bat\tool`: false, `cmd`: false,
	}
	for p, want := range tests {
		if got := isBatch(p); got != want {
			t.Errorf("isBatch(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestBatchCommandLine builds command lines for batch files and reads them
// back as cmd.exe, then the program the batch file runs, would: no
// character cmd.exe acts on is outside quotes, and the arguments arrive as
// they were given.
func TestBatchCommandLine(t *testing.T) {
	const cmdExe = `C:\Windows\System32\cmd.exe`
	const bat = `C:\Program Files\nodejs\npx.cmd`
	tests := []struct {
		name string
		args []string
		want string // the line; "" to check the round trip only
		bad  int    // the index of the argument refused (from 1); 0 for none
	}{
		{name: "plain", args: []string{"-y", "@modelcontextprotocol/server-memory"},
			want: `"C:\Windows\System32\cmd.exe" /d /e:on /v:off /s /c ""C:\Program Files\nodejs\npx.cmd" "-y" "@modelcontextprotocol/server-memory""`},
		{name: "no arguments", want: `"C:\Windows\System32\cmd.exe" /d /e:on /v:off /s /c ""C:\Program Files\nodejs\npx.cmd""`},
		{name: "an empty argument", args: []string{""}},
		{name: "command separators", args: []string{"a&calc", "b|calc", "c>out", "d<in", "e^f", "(g)", "x && calc"}},
		{name: "delayed expansion is off", args: []string{"!PATH!"}},
		{name: "spaces and tabs", args: []string{"a b", "c\td"}},
		{name: "a trailing backslash", args: []string{`C:\dir\`, "next"},
			want: `"C:\Windows\System32\cmd.exe" /d /e:on /v:off /s /c ""C:\Program Files\nodejs\npx.cmd" "C:\dir\\" "next""`},
		{name: "inner backslashes", args: []string{`a\\b\c`, `\\server\share\\`}},
		{name: "a variable", args: []string{"ok", "%PATH%"}, bad: 2},
		{name: "a lone percent", args: []string{"100%"}, bad: 1},
		{name: "a quote", args: []string{`a" & calc & "`}, bad: 1},
		{name: "a line break", args: []string{"a\r\ncalc"}, bad: 1},
		{name: "NUL", args: []string{"a\x00b"}, bad: 1},
	}
	for _, tt := range tests {
		line, err := batchCommandLine(cmdExe, bat, tt.args)
		if tt.bad > 0 {
			var ue *UnsafeArgError
			if !errors.As(err, &ue) || ue.Index != tt.bad || ue.Batch != bat {
				t.Errorf("%s: got %q, %v; want an *UnsafeArgError for argument %d", tt.name, line, err, tt.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if tt.want != "" && line != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.name, line, tt.want)
		}
		rest, ok := strings.CutPrefix(line, `"`+cmdExe+`" /d /e:on /v:off /s /c "`)
		if !ok || !strings.HasSuffix(rest, `"`) {
			t.Errorf("%s: %s does not run cmd.exe /s /c \"...\"", tt.name, line)
			continue
		}
		inner := strings.TrimSuffix(rest, `"`) // what /s leaves cmd.exe to run
		if bare := outsideQuotes(inner); strings.ContainsAny(bare, "&|<>^()%!\r\n") {
			t.Errorf("%s: %q leaves %q outside quotes", tt.name, inner, bare)
		}
		got := argvOf(inner)
		if want := append([]string{bat}, tt.args...); !slices.Equal(got, want) {
			t.Errorf("%s: the program reads %q, want %q", tt.name, got, want)
		}
	}

	if _, err := batchCommandLine(cmdExe, `C:\100%\x.cmd`, nil); err == nil {
		t.Errorf("a batch file whose path holds %% was accepted")
	}
	if _, err := batchCommandLine(cmdExe, bat, []string{strings.Repeat("a", maxCommandLine)}); err == nil {
		t.Errorf("a command line over %d characters was accepted", maxCommandLine)
	}
}

// outsideQuotes returns what of s cmd.exe reads outside double quotes,
// where its special characters act.
func outsideQuotes(s string) string {
	var b strings.Builder
	quoted := false
	for _, r := range s {
		if r == '"' {
			quoted = !quoted
			continue
		}
		if !quoted {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// argvOf splits a command line as CommandLineToArgvW (and the C runtime)
// does: 2n backslashes before a quote are n and the quote toggles
// quoting, 2n+1 are n and a literal quote, other backslashes are literal.
func argvOf(s string) []string {
	var args []string
	var b strings.Builder
	inArg, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				b.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					b.WriteByte('"')
				} else {
					quoted = !quoted
				}
			} else {
				b.WriteString(strings.Repeat(`\`, n))
				i--
			}
			inArg = true
		case c == '"':
			quoted = !quoted
			inArg = true
		case (c == ' ' || c == '\t') && !quoted:
			if inArg {
				args = append(args, b.String())
				b.Reset()
				inArg = false
			}
		default:
			b.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		args = append(args, b.String())
	}
	return args
}
