// Package lazyregexp holds regular expressions compiled on first use, not
// at init. Go runs the init of every package of a program before main,
// whatever the command, and every agent starts mcpgen once per server:
// compiling a pattern such as ^[A-Za-z0-9_-]{1,64}$ takes hundreds of
// allocations, which a process that never matches it should not pay.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// A Regexp is a regexp.Regexp compiled the first time it is used. It is
// safe for concurrent use.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// inTest is whether this is a test binary (name.test), where New compiles
// at once, so that a bad pattern fails the tests of its package at init,
// as regexp.MustCompile would, rather than the first use that a test may
// not make.
var inTest = len(os.Args) > 0 && strings.HasSuffix(strings.TrimSuffix(os.Args[0], ".exe"), ".test")

// New returns the Regexp of str, which is compiled when first used; it
// panics then if str is not a valid expression.
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

// String returns the source text of the expression, without compiling it.
func (r *Regexp) String() string { return r.str }

// MatchString is regexp.Regexp.MatchString.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// FindSubmatch is regexp.Regexp.FindSubmatch.
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.re().FindSubmatch(b) }

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.re().ReplaceAllString(src, repl)
}

// Split is regexp.Regexp.Split.
func (r *Regexp) Split(s string, n int) []string { return r.re().Split(s, n) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }
