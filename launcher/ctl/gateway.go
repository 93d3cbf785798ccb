package ctl

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/manifest"
)

// GatewayStatus is the workspace gateway's part of status: how it names
// the servers' tools and prompts, the resource URIs that several servers
// offer, and the agents connected to it.
type GatewayStatus struct {
	Prefix string `json:"prefix"` // conflicts or always
	// Search is set when the gateway lists search_tools, call_tool and
	// the pinned tools instead of every tool ([gateway] tools = "search").
	Search    *GatewaySearch    `json:"search,omitempty"`
	Tools     []GatewayName     `json:"tools"`
	Prompts   []GatewayName     `json:"prompts"`
	Conflicts []GatewayConflict `json:"conflicts"`
	Clients   ClientsStatus     `json:"clients"`
}

// GatewaySearch is the gateway's search mode.
type GatewaySearch struct {
	Pin    []string `json:"pin"`    // the tools it lists as themselves
	Reveal bool     `json:"reveal"` // an agent's list grows by the tools it found
	// Unknown are the pins that name no tool of the gateway's catalog
	// (cached servers' included): a typo, or a server that never listed.
	Unknown []string `json:"unknown,omitempty"`
}

// A GatewayName is one tool or prompt as the gateway exposes it.
type GatewayName struct {
	Name     string `json:"name"`     // as agents see it
	Server   string `json:"server"`   // the server that has it
	Original string `json:"original"` // the server's own name for it
	Failed   bool   `json:"failed,omitempty"`
}

// A GatewayConflict is a resource URI (or template) that several servers
// offer: the first of Servers serves it.
type GatewayConflict struct {
	URI      string   `json:"uri"`
	Template bool     `json:"template,omitempty"`
	Servers  []string `json:"servers"`
}

// writeGateway writes the gateway's part of the status table: the tools
// and prompts it renames (every other keeps its name), and the URIs that
// several servers offer.
func (st *Status) writeGateway(w io.Writer) {
	g := st.Gateway
	if g == nil {
		return
	}
	renamed := func(names []GatewayName) []GatewayName {
		var out []GatewayName
		for _, n := range names {
			if n.Name != n.Original {
				out = append(out, n)
			}
		}
		return out
	}
	tools, prompts := renamed(g.Tools), renamed(g.Prompts)
	search := ""
	if g.Search != nil {
		search = fmt.Sprintf("; tools = \"search\" (search_tools, call_tool and %d pinned)", len(g.Search.Pin)-len(g.Search.Unknown))
		if len(g.Search.Unknown) > 0 {
			search += "; pinned but no such tool: " + strings.Join(g.Search.Unknown, ", ")
		}
	}
	fmt.Fprintf(w, "gateway: %d tools (%d renamed), %d prompts, %d clients; prefix = %q (%s)%s\n",
		len(g.Tools), len(tools), len(g.Prompts), g.Clients.Count, g.Prefix, prefixMeaning(g.Prefix), search)
	if len(tools)+len(prompts) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tSERVER\tAS THE SERVER NAMES IT")
		for _, list := range []struct {
			kind  string
			names []GatewayName
		}{{"tool", tools}, {"prompt", prompts}} {
			for _, n := range list.names {
				note := ""
				if n.Failed {
					note = " (failed: not listed)"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s %s%s\n", oneLine(n.Name, 64), oneLine(n.Server, 64), list.kind, oneLine(n.Original, 64), note)
			}
		}
		tw.Flush()
	}
	for _, c := range g.Conflicts {
		kind := "resource"
		if c.Template {
			kind = "resource template"
		}
		fmt.Fprintf(w, "  %s %s: served by %s, also offered by %s\n", kind, oneLine(c.URI, 120), termtext.Line(c.Servers[0]), termtext.Line(strings.Join(c.Servers[1:], ", ")))
	}
}

// prefixMeaning says what the gateway's prefix setting does: the default
// is a way of naming, not a conflict to fix.
func prefixMeaning(prefix string) string {
	if prefix == manifest.GatewayPrefixAlways {
		return "SERVER__ on every name"
	}
	return "SERVER__ only on names that several servers share"
}
