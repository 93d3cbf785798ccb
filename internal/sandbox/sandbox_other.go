//go:build !linux

package sandbox

import "os/exec"

// Prepare enforces nothing outside Linux yet: the Report says so, and a
// strict policy refuses to start. cmd is left as it is.
func Prepare(cmd *exec.Cmd, p *Policy) (Report, error) {
	if err := p.Check(); err != nil {
		return Report{}, err
	}
	r := Report{
		Platform:    "none (no sandbox on this platform yet)",
		NotEnforced: []string{"file access: not confined", "network: not confined", "other processes: visible"},
	}
	return r, strict(p, r)
}

// Main is Linux's hidden entry; elsewhere there is none.
func Main() (code int, ok bool) { return 0, false }
