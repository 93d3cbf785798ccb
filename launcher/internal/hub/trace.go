package hub

import (
	json "github.com/goccy/go-json"

	"go.opentelemetry.io/otel/attribute"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/tracing"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file traces tool calls (package tracing): a span for each call the
// hub forwards, the child of the agent's span when its request's _meta
// carried a traceparent, and the parent of the server's (the request
// reaches the server with the span's traceparent). A call through the
// gateway is one span too, its face "gateway": the gateway and the hub are
// one hop, in one process. Without a tracer nothing here runs.

// SetTracer has the hub trace the tool calls it forwards from now on (nil:
// none).
func (h *Hub) SetTracer(t *tracing.Tracer) { h.tracer.Store(t) }

// A callTrace is a forwarded call's span, and the trace context that goes
// to the server with it.
type callTrace struct {
	span          *tracing.Span
	parent, state string
}

// traceCall begins the span of a call of tool the client forwards, if the
// hub traces.
func (c *client) traceCall(f *forward, tool string) {
	t := c.hub.tracer.Load()
	if t == nil {
		return
	}
	face := "hub"
	if c.member {
		face = "gateway"
	}
	meta := f.call.Meta()
	span, parent, state := t.Start("tools/call "+tool, tracing.Server, meta.Traceparent, meta.Tracestate,
		attribute.String("mcp.method", "tools/call"),
		attribute.String("mcp.tool", tool),
		attribute.String("mcp.server", c.hub.name),
		attribute.String("mcp.face", face),
		attribute.String("mcp.client", c.displayName()),
	)
	f.trace = &callTrace{span: span, parent: parent, state: state}
}

// withTrace returns a forwarded request's params with the span's trace
// context in _meta, in place of the agent's.
func (ct *callTrace) withTrace(params json.RawMessage) json.RawMessage {
	if ct == nil || ct.parent == "" {
		return params
	}
	set := []mcp.ObjectMember{{Key: mcp.MetaTraceparent, Value: jsonwire.AppendString(nil, ct.parent)}, {Key: mcp.MetaTracestate, Value: nil}}
	if ct.state != "" {
		set[1].Value = jsonwire.AppendString(nil, ct.state)
	}
	out, err := mcp.SetMeta(params, set...)
	if err != nil {
		return params
	}
	return out
}

// end ends the span: failed for an error, or a tool's error result.
func (ct *callTrace) end(result json.RawMessage, err *mcp.Error, why error) {
	if ct == nil {
		return
	}
	switch {
	case why != nil:
		ct.span.End(true, why.Error())
	case err != nil:
		ct.span.End(true, err.Message)
	case isErrorResult(result):
		ct.span.End(true, "the tool's result is an error")
	default:
		ct.span.End(false, "")
	}
}
