package gateway

import (
	"context"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
)

// This file is what the gateway tells the agent.Conn of the workspace,
// for the modern agents: what server/discover answers (the merged
// catalog's capabilities and instructions, the gateway's identity), and
// the identity that the results of modern requests name: the gateway's,
// whichever server answered.

// A described is the session's agent.Description, kept for the catalog
// it was made from.
type described struct {
	cat *Catalog
	d   *agent.Description
}

// serverInfoJSON is serverInfo, encoded (by hand: nothing is built at
// init; TestServerInfoJSON checks it).
var serverInfoJSON = json.RawMessage(`{"name":"mcpgen","title":"mcpgen workspace gateway","version":"gateway"}`)

// Describe says what the gateway is to the agent now (see
// agent.Handler): what its initialize answers, in the form of
// server/discover.
func (s *session) Describe() *agent.Description {
	cat := s.cat.Load()
	if cat == nil {
		return nil
	}
	if d := s.desc.Load(); d != nil && d.cat == cat {
		return d.d
	}
	d := &agent.Description{
		Capabilities: cat.Capabilities(),
		ServerInfo:   serverInfoJSON,
		Instructions: cat.Instructions(),
		Own:          true,
	}
	s.desc.Store(&described{cat: cat, d: d})
	return d
}

// Ready is at once: the gateway answers from the catalog it has, as its
// initialize does.
func (s *session) Ready(context.Context) error { return nil }
