package sandbox

import (
	"os"
	"os/exec"
	"slices"
)

// Enforces says whether this platform enforces a sandbox at all: with
// sandbox-exec, which macOS ships; without it, the Report says so.
const Enforces = true

// haveSandboxExec says whether macOS's sandbox-exec is there to run.
func haveSandboxExec() bool {
	fi, err := os.Stat(sandboxExec)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Inspect says what Seatbelt would enforce of p, without starting
// anything: for validate and status.
func Inspect(p *Policy) Report { return seatbeltReport(p, haveSandboxExec()) }

// Prepare makes cmd, made by exec.Command with its Env set, start inside
// the sandbox p: sandbox-exec applies a Seatbelt profile made from p and
// runs the command (see prepareSeatbelt). The Setup's Close releases the
// command's temporary directory and egress proxy once it has exited. A
// strict policy that cannot be enforced in full is a StrictError, and cmd
// is left as it was.
func Prepare(cmd *exec.Cmd, p *Policy) (*Setup, error) {
	return prepareSeatbelt(cmd, p, haveSandboxExec())
}

// Main is Linux's hidden entry; macOS has none: sandbox-exec applies the
// profile.
func Main() (code int, ok bool) { return 0, false }

// SystemPaths are what every sandboxed process may read on this platform
// besides its grants (the profile grants them whatever the policy): the
// system's programs, libraries and frameworks, Homebrew's prefixes, the
// developer tools, certificates, name resolution, users and time zones,
// and the devices that programs open without asking.
func SystemPaths() []string {
	return slices.Concat(seatbeltSystemDirs, seatbeltSystemReads, []string{"/dev/null", "/dev/zero"})
}
