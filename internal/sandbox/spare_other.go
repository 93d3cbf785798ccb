//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os/exec"
)

// Spares are Linux's (spare_linux.go): a setup step started ahead of
// need. Elsewhere there are none, and every start prepares its own.
type Spares struct{}

// NewSpares returns a set that never has a spare.
func NewSpares(start func(*exec.Cmd) error) *Spares { return &Spares{} }

// Take returns nil: the caller uses Prepare.
func (s *Spares) Take(cmd *exec.Cmd, p *Policy) *Spare { return nil }

// Ready fails: there are no spares here.
func (s *Spares) Ready(ctx context.Context, p *Policy) error {
	return errors.New("sandbox: no spare setup steps on this platform")
}

// Close does nothing. Safe on nil.
func (s *Spares) Close() {}

// A Spare is never made outside Linux.
type Spare struct{}

// Cmd is nil: there is no spare.
func (sp *Spare) Cmd() *exec.Cmd { return nil }

// Discard does nothing.
func (sp *Spare) Discard() {}

// Run fails: there is no spare.
func (sp *Spare) Run(cmd *exec.Cmd) (*Setup, error) {
	return nil, errors.New("sandbox: no spare setup steps on this platform")
}

// ErrSpareGone is Run's error when the spare could not be given its
// order; there are none here.
var ErrSpareGone = errors.New("sandbox: the spare setup step is gone")
