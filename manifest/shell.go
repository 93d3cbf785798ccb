package manifest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// An interpreter is a program that runs code given on its command line. A
// tool argument substituted into that code is code that the model writes:
// with run = ["sh", "-c", "grep {pattern} ."], the pattern
// "x .; touch PWNED; echo" runs touch. interpreters is the one list of
// them: validate warns about such arguments and serve refuses them, unless
// the argument says allow_shell = true.
type interpreter struct {
	// names are program names as progName writes them: the base name, in
	// lower case, without ".exe" and a version ("python3.12" is python).
	names []string
	// code are the options whose value is code: the next element, or
	// the rest of the option's own text ("-cprint(1)", "--eval=...").
	code []string
	// script are the options after which the first operand is code: the
	// shells' -c, also in a cluster ("-lc", "-ec").
	script []string
	// takes are the other options that take a value, skipped with it.
	takes []string
	// ends are the options after which nothing is code (python -m MODULE,
	// awk -f FILE): the operands are a module's, a file's arguments.
	ends []string
	// operand says that without an option of code or ends, an operand is
	// code: the first for awk and sed (their program), every one after
	// the destination for ssh, which joins them into a command line for
	// the remote shell. skip is how many operands come first.
	operand bool
	skip    int
	rest    bool // every element from that operand on is code
	// program says that the operand rule holds only where a program
	// stands (run[0], or after a wrapper such as env or xargs): anywhere
	// else "awk" or "sed" may be a word that a command searches for.
	program bool
	// windows says that options start with "/" or "-", in any case, and
	// may be shortened (cmd /C, powershell -Com); code then says after
	// which options everything is code, and ends after which nothing is.
	windows bool
	// cmd: an option is one letter, and the command may start in it
	// ("/cdir").
	cmd bool
	// read is how the code reads an argument passed after it, for the
	// fix the messages suggest; empty when there is no such way.
	read string
	// posix marks the shells whose scripts take positional parameters:
	// validate rewrites their scripts into the positional form.
	posix bool
}

var shellOptions = []string{"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}

var interpreters = []interpreter{
	{names: []string{"sh", "bash", "rbash", "dash", "ash", "zsh", "ksh", "mksh", "lksh", "pdksh", "yash", "posh"},
		script: []string{"-c"}, takes: shellOptions, read: `"$1"`, posix: true},
	{names: []string{"fish"}, code: []string{"-c", "--command", "-C", "--init-command"}, read: "$argv[1]"},
	{names: []string{"csh", "tcsh"}, code: []string{"-c"}, read: "$argv[1]"},
	{names: []string{"python", "pypy", "py", "ipython"}, code: []string{"-c"}, takes: []string{"-W", "-X", "-Q"}, ends: []string{"-m"}, read: "sys.argv[1]"},
	{names: []string{"node", "nodejs", "bun"}, code: []string{"-e", "--eval", "-p", "--print"},
		takes: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"}, read: "process.argv[1]"},
	{names: []string{"deno"}, script: []string{"eval"}, read: "Deno.args[0]"},
	{names: []string{"perl"}, code: []string{"-e", "-E"}, read: "$ARGV[0]"},
	{names: []string{"ruby"}, code: []string{"-e"}, takes: []string{"-I", "-r", "-C"}, read: "ARGV[0]"},
	{names: []string{"php"}, code: []string{"-r"}, takes: []string{"-c", "-d", "-z"}, read: "$argv[1]"},
	{names: []string{"lua", "luajit"}, code: []string{"-e"}, takes: []string{"-l"}, read: "arg[1]"},
	{names: []string{"rscript", "r"}, code: []string{"-e"}, read: "commandArgs(TRUE)[1]"},
	{names: []string{"osascript"}, code: []string{"-e"}},
	{names: []string{"su", "runuser"}, code: []string{"-c", "--command", "--session-command"}, takes: []string{"-s", "--shell", "-g", "--group", "-G", "--supp-group", "-u", "--user"}},
	{names: []string{"ssh"}, operand: true, skip: 1, rest: true,
		takes: []string{"-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-P", "-p", "-Q", "-R", "-S", "-W", "-w"}},
	{names: []string{"watch"}, operand: true, rest: true, takes: []string{"-n", "--interval"}, ends: []string{"-x", "--exec"}},
	{names: []string{"awk", "gawk", "mawk", "nawk"}, operand: true, program: true, code: []string{"-e", "--source"},
		takes: []string{"-F", "--field-separator", "-v", "--assign"}, ends: []string{"-f", "--file"}, read: "a variable: -v name={arg}"},
	{names: []string{"sed", "gsed"}, operand: true, program: true, code: []string{"-e", "--expression"},
		takes: []string{"-l", "--line-length"}, ends: []string{"-f", "--file"}},
	{names: []string{"cmd"}, windows: true, cmd: true, code: []string{"c", "k", "r"}},
	{names: []string{"powershell"}, windows: true, operand: true, code: powershellCode, ends: []string{"file"}, takes: powershellTakes},
	{names: []string{"pwsh"}, windows: true, code: powershellCode, ends: []string{"file"}, takes: powershellTakes},
}

var (
	powershellCode  = []string{"command", "encodedcommand", "ec"}
	powershellTakes = []string{"executionpolicy", "ep", "ex", "windowstyle", "outputformat", "of", "inputformat", "if",
		"configurationname", "workingdirectory", "wd", "settingsfile", "version", "custompipename", "psconsolefile"}
)

// wrappers run the program that follows them: what comes after one stands
// where a program does.
var wrappers = []string{"env", "sudo", "doas", "nice", "nohup", "xargs", "exec", "command", "time", "stdbuf", "setsid", "busybox", "chroot", "-exec", "-execdir", "-ok", "--"}

// progName is how interpreters names a program: "/usr/bin/python3.12" is
// python, "C:\Windows\System32\cmd.exe" is cmd.
func progName(s string) string {
	s = s[strings.LastIndexAny(s, `/\`)+1:]
	s = strings.TrimSuffix(strings.ToLower(s), ".exe")
	return strings.TrimRight(s, "0123456789.-")
}

func findInterpreter(name string) *interpreter {
	for i := range interpreters {
		if slices.Contains(interpreters[i].names, name) {
			return &interpreters[i]
		}
	}
	return nil
}

// A ShellUse is a string argument of a declared tool that the tool
// substitutes into code that an interpreter runs: the model can make it
// run any command.
type ShellUse struct {
	Arg  *Arg
	Elem int    // the element of run that holds the code
	Runs string // what runs the code, as written: "sh -c", "cmd /c", "awk"
	// Fix is the run that passes the argument as one of its own, as TOML
	// ("" when validate cannot write it); Read says how code reads such
	// an argument ("" when it cannot).
	Fix, Read string
}

// ShellUses returns the tool's arguments that are substituted into code
// that an interpreter of the list runs: string arguments without an enum
// (an integer or an enum member cannot change the code's meaning) and
// without allow_shell. A program named by a reference (${PYTHON}) cannot
// be known, and is not checked.
func (t *Tool) ShellUses() []ShellUse {
	var uses []ShellUse
	for _, c := range codeElements(t.Run) {
		var args []*Arg
		for _, a := range t.Args {
			if a.Type == TypeString && a.Enum == nil && !a.AllowShell && usesArg(t.Run[c.elem:c.elem+1], a.Name) &&
				!slices.ContainsFunc(uses, func(u ShellUse) bool { return u.Arg == a }) {
				args = append(args, a)
			}
		}
		fix := ""
		if c.in.posix && len(args) > 0 {
			if run, ok := positional(t.Run, c.elem, args); ok {
				fix = TOMLArray(run)
			}
		}
		for _, a := range args {
			uses = append(uses, ShellUse{Arg: a, Elem: c.elem, Runs: c.runs, Fix: fix, Read: c.in.read})
		}
	}
	return uses
}

// Message says what is wrong with u, and how to fix it.
func (u ShellUse) Message(tool string) string { return u.message(tool, "") }

// message is Message with a verdict after what is wrong.
func (u ShellUse) message(tool, verdict string) string {
	var fix string
	switch {
	case u.Fix != "":
		fix = "pass it as an argument of its own, write " + u.Fix
	case u.Read != "":
		fix = fmt.Sprintf("pass {%s} as an element of its own after the code, and read it there as %s", u.Arg.Name, u.Read)
	default:
		fix = fmt.Sprintf("run the program directly, with {%s} as an element of its own", u.Arg.Name)
	}
	return fmt.Sprintf("tool %q: argument %q is substituted into the code that %q runs, so the model can make it run any command%s: %s (or, if it must be code, set allow_shell = true on %q)",
		tool, u.Arg.Name, u.Runs, verdict, fix, u.Arg.Name)
}

// ShellErrors returns, at their places in the manifest, the uses of s's
// tools that mcpgen serve refuses to run (see ShellUses): validate warns
// about them, and a server that has one does not start.
func (m *Manifest) ShellErrors(s *Server) Errors {
	var errs Errors
	for _, t := range s.Tools {
		for _, u := range t.ShellUses() {
			e := &Error{File: m.File, Pos: m.pos.value([]string{"servers", s.Name, "tools", t.Name, "run", indexKey(u.Elem)}),
				Server: s.Name, Key: dotted([]string{"tools", t.Name, "run", indexKey(u.Elem)}), Msg: u.message(t.Name, ", and mcpgen serve refuses to run such a tool"), Suggestion: u.Fix}
			e.Path = "servers." + s.Name + "." + e.Key
			errs = append(errs, e)
		}
	}
	return errs
}

// A codeElement is an element of a run that an interpreter runs as code.
type codeElement struct {
	elem int
	runs string
	in   *interpreter
}

// codeElements finds the elements of run that are code: for each program
// of the list in it (wrappers such as env, xargs or find -exec put one
// anywhere), the elements its options and operands make code.
func codeElements(run []Template) []codeElement {
	words := make([]string, len(run))
	for i, e := range run {
		words[i] = e.String()
	}
	var out []codeElement
	for i, w := range words {
		in := findInterpreter(progName(w))
		if in == nil {
			continue
		}
		atProgram := i == 0 || slices.Contains(wrappers, words[i-1]) || slices.Contains(wrappers, progName(words[i-1]))
		label := w[strings.LastIndexAny(w, `/\`)+1:]
		for _, c := range in.codeIn(words[i+1:], atProgram) {
			runs := label
			if c.flag != "" {
				runs += " " + c.flag
			}
			for _, j := range c.elems {
				if !slices.ContainsFunc(out, func(o codeElement) bool { return o.elem == i+1+j }) {
					out = append(out, codeElement{elem: i + 1 + j, runs: runs, in: in})
				}
			}
		}
	}
	return out
}

// code is what codeIn finds: elements (indexes into args) and the option
// that made them code ("-c"; empty for an operand).
type code struct {
	elems []int
	flag  string
}

// codeIn returns the elements of args, the words after the program, that
// the interpreter runs as code.
func (in *interpreter) codeIn(args []string, atProgram bool) []code {
	if in.windows {
		return in.windowsCode(args)
	}
	var out []code
	script := "" // a script option seen: the first operand is code
	operand := in.operand && (atProgram || !in.program)
	for _, a := range args {
		if in.isOption(a, in.code) || in.isOption(a, in.ends) {
			operand = false // -e, -f: the operands are files
		}
	}
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			continue
		case len(a) > 1 && (a[0] == '-' || a[0] == '+' && in.posix) && !isOperandAfterDashDash(args, i):
			if strings.HasPrefix(a, "--") {
				name, _, hasValue := strings.Cut(a, "=")
				switch {
				case slices.Contains(in.ends, name):
					return out
				case slices.Contains(in.code, name):
					if hasValue {
						out = append(out, code{[]int{i}, name})
					} else if i+1 < len(args) {
						out = append(out, code{[]int{i + 1}, name})
						i++
					}
				case slices.Contains(in.script, name):
					script = name
				case slices.Contains(in.takes, name) && !hasValue:
					i++
				}
				continue
			}
			// A cluster of short options: "-lc", "-ne", "-cprint(1)".
			for k := 1; k < len(a); k++ {
				opt := a[:1] + a[k:k+1]
				switch {
				case slices.Contains(in.ends, opt):
					return out
				case slices.Contains(in.code, opt):
					if k+1 < len(a) {
						out = append(out, code{[]int{i}, opt})
					} else if i+1 < len(args) {
						out = append(out, code{[]int{i + 1}, opt})
						i++
					}
					k = len(a)
				case slices.Contains(in.script, opt):
					script = opt
				case slices.Contains(in.takes, opt):
					if k+1 == len(a) {
						i++
					}
					k = len(a)
				}
			}
		default: // an operand
			switch {
			case script != "":
				return append(out, code{[]int{i}, script})
			case slices.Contains(in.script, a):
				script = a // deno eval
			case operand:
				operands++
				if operands > in.skip {
					c := code{elems: []int{i}}
					if in.rest {
						for j := i + 1; j < len(args); j++ {
							c.elems = append(c.elems, j)
						}
					}
					return append(out, c)
				}
			default:
				return out // a script file: what follows is its arguments
			}
		}
	}
	return out
}

// isOperandAfterDashDash reports whether a "--" before args[i] ended the
// options.
func isOperandAfterDashDash(args []string, i int) bool {
	return slices.Contains(args[:i], "--")
}

// isOption reports whether a is one of the options opts, alone, with a
// value ("--eval=x"), or in a cluster ("-ne").
func (in *interpreter) isOption(a string, opts []string) bool {
	for _, o := range opts {
		switch {
		case strings.HasPrefix(o, "--"):
			if name, _, _ := strings.Cut(a, "="); name == o {
				return true
			}
		case len(o) == 2 && len(a) > 1 && a[0] == o[0] && !strings.HasPrefix(a, "--"):
			if strings.IndexByte(a[1:], o[1]) >= 0 {
				return true
			}
		}
	}
	return false
}

// windowsCode finds the code of cmd (/c: the rest of the line) and of
// PowerShell (-Command: the rest; Windows PowerShell also takes a first
// operand as its command, pwsh as a script file).
func (in *interpreter) windowsCode(args []string) []code {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '/' && a[0] != '-' {
			switch {
			case in.operand:
				return []code{{rest(i, len(args)), ""}}
			case in.cmd:
				continue // not an option of cmd's: nothing runs until /c
			}
			return nil // pwsh: a script file, and its arguments
		}
		opt := strings.ToLower(strings.TrimLeft(a, "/-"))
		name, _, hasValue := strings.Cut(opt, ":")
		switch {
		case in.cmd:
			if name != "" && slices.Contains(in.code, name[:1]) {
				first := i + 1
				if len(name) > 1 {
					first = i // "/cdir": the command starts in the option
				}
				return []code{{rest(first, len(args)), a}}
			}
		case matchesAny(name, in.ends, 1):
			return nil
		case matchesAny(name, in.code, 1):
			return []code{{rest(i+1, len(args)), a}}
		case matchesAny(name, in.takes, 2) && !hasValue:
			i++
		}
	}
	return nil
}

func rest(from, n int) []int {
	var out []int
	for j := from; j < n; j++ {
		out = append(out, j)
	}
	return out
}

// matchesAny reports whether name is one of names or, as PowerShell
// allows, a prefix of one at least min letters long.
func matchesAny(name string, names []string, min int) bool {
	for _, n := range names {
		if name == n || len(name) >= min && strings.HasPrefix(n, name) {
			return true
		}
	}
	return false
}

// positional rewrites a POSIX shell's script, run[elem], so that the
// arguments args are not substituted into it but passed after it as
// positional parameters: grep {pattern} . becomes grep "$1" . with
// "sh", "{pattern}" after the script. It returns run as strings; ok is
// false when it cannot (more than nine parameters: $10 needs ${10},
// which the manifest would read as a reference).
func positional(run []Template, elem int, args []*Arg) (out []string, ok bool) {
	out = make([]string, len(run))
	for i, e := range run {
		out[i] = e.String()
	}
	next := len(run) - elem - 1 // $0, $1, ... already passed
	var extra []string
	if next == 0 {
		extra, next = []string{"sh"}, 1 // $0, the script's name
	}
	num := map[string]int{}
	for _, a := range args {
		num[a.Name] = next
		extra = append(extra, "{"+a.Name+"}")
		next++
	}
	if next-1 > 9 {
		return nil, false
	}
	out[elem] = rewriteScript(out[elem], num)
	return append(out, extra...), true
}

// rewriteScript replaces each {name} of num in a shell script by the
// positional parameter $N, quoted for where it stands: "$N" outside
// quotes, $N inside double quotes, '"$N"' inside single quotes.
func rewriteScript(s string, num map[string]int) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' {
			if name, w, literal := ArgAt(s, i); w > 0 {
				if n, ok := num[name]; ok && !literal {
					ref := "$" + strconv.Itoa(n)
					switch quote {
					case '"':
						b.WriteString(ref)
						if i+w < len(s) && s[i+w] >= '0' && s[i+w] <= '9' {
							b.WriteString(`""`) // "$1""0", not $10
						}
					case '\'':
						b.WriteString(`'"` + ref + `"'`)
					default:
						b.WriteString(`"` + ref + `"`)
					}
				} else {
					b.WriteString(s[i : i+w]) // the text {name}, or an argument left as it is
				}
				i += w - 1
				continue
			}
		}
		switch {
		case c == '\\' && quote != '\'' && i+1 < len(s):
			b.WriteByte(c)
			i++
			c = s[i]
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		}
		b.WriteByte(c)
	}
	return b.String()
}
