//go:build !linux && !darwin

package sandbox

import "os/exec"

// Enforces says whether this platform enforces a sandbox at all: not yet.
const Enforces = false

// report is what this platform enforces: nothing yet.
func report() Report {
	return Report{
		Platform:    "none (no sandbox on this platform yet)",
		NotEnforced: []string{"files: not confined", "network: not confined", "other processes: visible"},
	}
}

// Inspect says what the platform would enforce of p: nothing yet.
func Inspect(p *Policy) Report { return report() }

// Prepare enforces nothing outside Linux yet: the Report says so, and a
// strict policy refuses to start. cmd is left as it is.
func Prepare(cmd *exec.Cmd, p *Policy) (*Setup, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	s := &Setup{Report: report()}
	return s, strict(p, s.Report)
}

// Main is Linux's hidden entry; elsewhere there is none.
func Main() (code int, ok bool) { return 0, false }

// SystemPaths is empty where mcpgen does not enforce a sandbox yet
// (Windows, the BSDs): there is nothing to add the grants to.
func SystemPaths() []string { return nil }
