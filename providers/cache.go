package providers

import (
	"sync"

	"github.com/mcpgen/mcpgen/manifest"
)

// A Cache keeps the servers prepared for one provider (Native, Serve, Connect) for the
// others that one run renders: emit --provider all prepares each server the same way for
// every agent of a scope, and preparing them all again for each agent cost more than
// writing their entries. It keeps the workspace contexts that the agents share too. Safe
// for concurrent use; a nil *Cache keeps nothing. It lives as long as the run that made
// it.
type Cache struct {
	mu       sync.Mutex
	entries  map[cacheKey]*Entry
	contexts map[contextKey]*manifest.ContextTemplate
	prints   map[string]string // FingerprintJSON, by the JSON it was computed of
}

// contextKey is manifest.ContextOptions without its Getenv, which cannot be compared: a
// context made with one is not kept.
type contextKey struct {
	workspaceID, dir, user, cwd string
	project                     bool
}

// cacheKey is what an Entry depends on beside its server: how it is prepared, and the
// options that Native, Serve and Connect read. Context is compared by pointer: the
// providers of one run share one (Cache.Context).
type cacheKey struct {
	how     uint8
	s       *manifest.Server
	scope   Scope
	root    string
	mcpgen  string
	context *manifest.ContextTemplate
}

const (
	howNative uint8 = iota
	howServe
	howConnect
)

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{entries: map[cacheKey]*Entry{}, contexts: map[contextKey]*manifest.ContextTemplate{}, prints: map[string]string{}}
}

// Context returns m's context template for co, made once per Cache. With a nil Cache, it
// makes one.
func (c *Cache) Context(m *manifest.Manifest, co manifest.ContextOptions) (*manifest.ContextTemplate, error) {
	if c == nil || co.Getenv != nil {
		return m.ContextTemplate(co)
	}
	k := contextKey{co.WorkspaceID, co.Dir, co.User, co.Cwd, co.Project}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.contexts[k]; ok {
		return t, nil
	}
	t, err := m.ContextTemplate(co)
	if err == nil {
		c.contexts[k] = t
	}
	return t, err
}

// entry returns a copy of the Entry that prepare makes for s with o, made once per Cache.
// The copy is shallow: callers replace an Entry's fields, never the elements of its slices.
func (c *Cache) entry(how uint8, s *manifest.Server, o Options, prepare func() *Entry) *Entry {
	if c == nil {
		return prepare()
	}
	k := cacheKey{how: how, s: s, scope: o.Scope, root: o.Root, mcpgen: o.Mcpgen, context: o.Context}
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok {
		e = prepare() // outside the lock: two providers may make it at once, alike
		c.mu.Lock()
		c.entries[k] = e
		c.mu.Unlock()
	}
	dup := *e
	return &dup
}

// FingerprintJSON is FingerprintJSON(raw), computed once per Cache for each JSON text:
// most agents write a server's entry alike (command, args, env), so most entries of
// emit --provider all are written, and fingerprinted, many times over.
func (c *Cache) FingerprintJSON(raw []byte) string {
	if c == nil {
		return FingerprintJSON(raw)
	}
	c.mu.Lock()
	fp, ok := c.prints[string(raw)]
	c.mu.Unlock()
	if !ok {
		fp = FingerprintJSON(raw)
		c.mu.Lock()
		c.prints[string(raw)] = fp
		c.mu.Unlock()
	}
	return fp
}
