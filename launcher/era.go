package launcher

import (
	"errors"
	"fmt"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what a supervisor knows of its server's era (the legacy
// initialize handshake, or the modern revision without one), and how its
// handshake opens the server with it: the manifest's protocol when it pins
// one; else the era found by the last handshake of the same configuration,
// or kept in its catalog by an earlier run (or mcpgen build), so that a
// server's start asks nothing that is known; else the probe (see
// mcp.Client.Open).

// An eraKnown is what a supervisor knows of the era of its server under
// one configuration; guarded by the supervisor's mu.
type eraKnown struct {
	key   string // the configuration's catalog key (serverConfig.catKey)
	era   mcp.Era
	probe bool // the era kept failed the last handshake: ask again
	guess bool // era is what the next start assumes, no server said it
}

// openOptions says how the next handshake of cfg's server opens it.
func (v *supervisor) openOptions(cfg *serverConfig) mcp.OpenOptions {
	if p := cfg.server.Protocol; p != "" {
		return mcp.OpenOptions{Version: p}
	}
	k := v.knownEra(cfg)
	if k.probe {
		return mcp.OpenOptions{}
	}
	// Known legacy: initialize at once, the probe only if it is refused.
	// Known modern: server/discover, without the grace.
	return mcp.OpenOptions{Known: k.era}
}

// knownEra returns what is known of the era of cfg's server: what its last
// handshake under cfg found, else what its catalog kept under cfg says
// (read once per configuration).
func (v *supervisor) knownEra(cfg *serverConfig) eraKnown {
	v.mu.Lock()
	k := v.eraKnown
	v.mu.Unlock()
	if k.key == cfg.catKey && k.key != "" {
		return k
	}
	k = eraKnown{key: cfg.catKey}
	// A catalog that cannot be read is no era known: the session says why
	// when it answers from catalogs (a lazy server's), and the handshake
	// replaces it.
	if cat, _ := loadCatalog(v.host.catalogs.dir, v.name, cfg.catKey); cat != nil {
		k.era = cat.init.Era
	}
	v.mu.Lock()
	v.eraKnown = k
	v.mu.Unlock()
	return k
}

// handshook notes what a handshake of cfg's server found: its era; or,
// when its process ended during the probe, that it is legacy (some legacy
// servers exit on a request before initialize: the next start asks it
// nothing); or, when the era it was opened with failed it otherwise, that
// the next start asks.
func (v *supervisor) handshook(cfg *serverConfig, up *hub.Upstream, r *handshake) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := v.eraKnown
	if k.key != cfg.catKey {
		k = eraKnown{key: cfg.catKey}
	}
	switch {
	case r.err == nil:
		k = eraKnown{key: cfg.catKey, era: up.Era()}
	case errors.Is(r.err, mcp.ErrProbeEnded):
		k = eraKnown{key: cfg.catKey, era: mcp.EraLegacy, guess: true}
		v.host.log.Info("the server ended when asked its era (server/discover): its next start opens it as legacy (initialize)", "server", v.name)
	case !r.cut && k.era != mcp.EraUnknown:
		k.probe = true
	}
	v.eraKnown = k
}

// eraStatusLocked is the server's era as status shows it: the one pinned,
// else found or kept for its configuration, else that of the catalog its
// hub answers from (a lazy server's, before it starts). The caller holds
// v.mu.
func (v *supervisor) eraStatusLocked() mcp.Era {
	if p := v.cfg.server.Protocol; p != "" {
		return mcp.VersionEra(p)
	}
	if k := v.eraKnown; k.key == v.cfg.catKey && k.key != "" && k.era != mcp.EraUnknown && !k.guess {
		return k.era
	}
	if init := v.hub.Catalog().Init; init != nil {
		return init.Era
	}
	return mcp.EraUnknown
}

// pinHint adds to the error of a handshake that the server refused, when
// the manifest pins the protocol, that the pin may be why: a server of the
// other era refuses the pinned one's opening.
func pinHint(protocol string, err error) error {
	var werr *mcp.Error
	if protocol == "" || !errors.As(err, &werr) {
		return err
	}
	return fmt.Errorf("%w (the manifest pins protocol = %q, which the server may not speak: \"auto\" asks it)", err, protocol)
}
