package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
)

// How Windows finds and starts a program: PATHEXT, and batch files run by
// cmd.exe. The rules are here, on strings, with the file system behind a
// function, so that tests on any system can check them; command_windows.go
// applies them.

// A statFunc is os.Stat, or a test's stand-in.
type statFunc func(string) (fs.FileInfo, error)

// defaultPathExt is what Windows uses when PATHEXT is unset.
var defaultPathExt = []string{".com", ".exe", ".bat", ".cmd"}

// envValueFold returns the value of key in env, whose names Windows
// compares without regard to case ("Path" is PATH); the last one wins, as
// os/exec's dedup keeps it.
func envValueFold(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(env[i], "=")
		if ok && k != "" && strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// pathExts returns the extensions of env's PATHEXT, lower case, each with
// its dot.
func pathExts(env []string) []string {
	v, ok := envValueFold(env, "PATHEXT")
	if !ok || v == "" {
		return defaultPathExt
	}
	var exts []string
	for _, e := range strings.Split(strings.ToLower(v), ";") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		exts = append(exts, e)
	}
	if len(exts) == 0 {
		return defaultPathExt
	}
	return exts
}

// splitPathList splits a Windows PATH: ';' separates entries, and an
// entry may be quoted (to hold a ';').
func splitPathList(path string) []string {
	var list []string
	var b strings.Builder
	quoted := false
	for _, r := range path {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ';' && !quoted:
			list = append(list, b.String())
			b.Reset()
		default:
			b.WriteRune(r)
		}
	}
	return append(list, b.String())
}

// isAbsWindows reports whether p is an absolute Windows path: C:\x, C:/x,
// or \\server\share.
func isAbsWindows(p string) bool {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return len(p) >= 2 && (p[0] == '\\' || p[0] == '/') && (p[1] == '\\' || p[1] == '/')
}

// joinWindows joins a directory and a name with one backslash.
func joinWindows(dir, name string) string {
	if strings.HasSuffix(dir, `\`) || strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + `\` + name
}

// hasExtWindows reports whether the last element of p has an extension.
func hasExtWindows(p string) bool {
	dot := strings.LastIndexByte(p, '.')
	return dot >= 0 && strings.LastIndexAny(p, `:\/`) < dot
}

// lookPathWindows finds the file that Windows would start for file, for a
// process with environment env and working directory dir (os.Stat is
// stat):
//
//   - a name with a directory in it (a '\', a '/' or a drive) is taken
//     relative to dir; a bare name ("npx") is looked for in each directory
//     of env's PATH, in order, and never in the current directory, where
//     anyone who can write a file could plant one (Go's os/exec refuses
//     such a find too: exec.ErrDot);
//   - in each place, the name as given if it has an extension, then the
//     name with each extension of env's PATHEXT, in order
//     (.COM;.EXE;.BAT;.CMD by default): "npx" is npx.cmd.
//
// Relative PATH entries are skipped, for the same reason as the current
// directory. A bare name found nowhere gives an error that satisfies
// errors.Is(err, exec.ErrNotFound); a path that does not exist, one that
// satisfies errors.Is(err, fs.ErrNotExist).
func lookPathWindows(file, dir string, env []string, stat statFunc) (string, error) {
	if file == "" {
		return "", &exec.Error{Name: file, Err: errors.New("empty program name")}
	}
	exts := pathExts(env)
	find := func(base string) (string, bool) {
		if hasExtWindows(base) && isProgramFile(base, stat) {
			return base, true
		}
		for _, e := range exts {
			if isProgramFile(base+e, stat) {
				return base + e, true
			}
		}
		return "", false
	}
	if strings.ContainsAny(file, `:\/`) {
		p := file
		if !isAbsWindows(p) && dir != "" {
			p = joinWindows(dir, p)
		}
		if found, ok := find(p); ok {
			return found, nil
		}
		return "", &exec.Error{Name: file, Err: fs.ErrNotExist}
	}
	path, _ := envValueFold(env, "PATH")
	for _, d := range splitPathList(path) {
		if d == "" || !isAbsWindows(d) {
			continue
		}
		if found, ok := find(joinWindows(d, file)); ok {
			return found, nil
		}
	}
	return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
}

// isProgramFile reports whether p names a file (not a directory).
func isProgramFile(p string, stat statFunc) bool {
	fi, err := stat(p)
	return err == nil && !fi.IsDir()
}

// isBatch reports whether Windows runs path through cmd.exe.
func isBatch(path string) bool {
	dot := strings.LastIndexByte(path, '.')
	if dot < 0 || strings.LastIndexAny(path, `:\/`) > dot {
		return false
	}
	ext := strings.ToLower(path[dot:])
	return ext == ".bat" || ext == ".cmd"
}

// maxCommandLine is the longest command line cmd.exe takes.
const maxCommandLine = 8191

// An UnsafeArgError is an argument that a batch file cannot be given
// safely: cmd.exe would read part of it as its own syntax.
type UnsafeArgError struct {
	Batch  string
	Index  int // the argument's index, from 1; 0 for the batch file's own path
	Arg    string
	Reason string
}

func (e *UnsafeArgError) Error() string {
	what := fmt.Sprintf("argument %d (%q)", e.Index, e.Arg)
	if e.Index == 0 {
		what = fmt.Sprintf("its path %q", e.Arg)
	}
	return fmt.Sprintf("%s: %s %s: a batch file (.cmd, .bat) cannot be given it safely; run the program the batch file runs instead", e.Batch, what, e.Reason)
}

// batchCommandLine returns the command line that runs the batch file bat
// with args through cmdExe:
//
//	"C:\Windows\System32\cmd.exe" /d /e:on /v:off /s /c ""C:\bin\npx.cmd" "-y" "pkg""
//
// Windows starts a batch file through cmd.exe, which parses the command
// line with its own rules: an unquoted &, |, <, > or ^ in an argument would
// run a command of the argument's choosing (the BatBadBut flaw that Rust
// and others fixed in 2024; os/exec quotes for CommandLineToArgvW, not for
// cmd.exe). So every argument is quoted, and what cmd.exe acts on even
// inside quotes is refused with an *UnsafeArgError: '%' (variable
// expansion), '"' (which would end the quoting) and line breaks and NUL
// (which end the command). Backslashes before the closing quote are
// doubled, so that the program the batch file runs, which splits its
// command line by CommandLineToArgvW's rules, reads them as they were.
// /d skips AutoRun commands from the registry, /v:off keeps '!' literal,
// and /s /c strips the outer pair of quotes and runs the rest as it is.
func batchCommandLine(cmdExe, bat string, args []string) (string, error) {
	check := func(i int, a string) error {
		reason := ""
		switch {
		case strings.ContainsRune(a, '%'):
			reason = "holds a %, which cmd.exe expands as a variable even in quotes"
		case strings.ContainsRune(a, '"'):
			reason = "holds a double quote, which would end cmd.exe's quoting"
		case strings.ContainsAny(a, "\r\n\x00"):
			reason = "holds a line break or NUL, which ends cmd.exe's command"
		default:
			return nil
		}
		return &UnsafeArgError{Batch: bat, Index: i, Arg: a, Reason: reason}
	}
	if err := check(0, bat); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(`"` + cmdExe + `" /d /e:on /v:off /s /c "`)
	b.WriteString(quoteForBatch(bat))
	for i, a := range args {
		if err := check(i+1, a); err != nil {
			return "", err
		}
		b.WriteByte(' ')
		b.WriteString(quoteForBatch(a))
	}
	b.WriteByte('"')
	if b.Len() > maxCommandLine {
		return "", fmt.Errorf("%s: the command line would be %d characters long, over cmd.exe's %d", bat, b.Len(), maxCommandLine)
	}
	return b.String(), nil
}

// quoteForBatch quotes a, which holds no '"', with its trailing
// backslashes doubled so that the closing quote stays a quote.
func quoteForBatch(a string) string {
	n := len(a) - len(strings.TrimRight(a, `\`))
	return `"` + a + strings.Repeat(`\`, n) + `"`
}
