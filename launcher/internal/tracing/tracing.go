// Package tracing makes the OpenTelemetry spans of the launcher's tool
// calls: the gateway's and the hub's hops of an agent's call, children of
// the agent's own span when its request carried a W3C traceparent in
// _meta, and the parents of what the server does with the call (the hub
// passes its own traceparent on in the request's _meta). Spans are
// exported over OTLP/HTTP when the standard variables ask for it
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); with
// neither set the Tracer is nil, and a nil Tracer makes nothing: no span,
// no change to any request.
//
// The exporter is this package's (otlp.go), in OTLP's JSON encoding, which
// every OTLP/HTTP receiver takes: the OpenTelemetry project's own OTLP
// exporters bring protobuf and gRPC, which would cost every mcpgen command
// some 30 ms of package initialization and 18 MB of binary, traced or not.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A Tracer makes spans; nil makes none.
type Tracer struct {
	tp *sdktrace.TracerProvider
	t  trace.Tracer
}

// Config is what FromEnv read: where spans go, and as whom.
type Config struct {
	Endpoint string            // the full URL spans are POSTed to
	Headers  map[string]string // sent with each export
	Service  string            // service.name
}

// ReadEnv reads the OpenTelemetry SDK's standard variables, and returns
// nil when no trace exporter is asked for: neither endpoint variable set,
// OTEL_TRACES_EXPORTER=none, or OTEL_SDK_DISABLED=true. An OTLP protocol
// other than HTTP (grpc) is an error that says what to set.
func ReadEnv(getenv func(string) string) (*Config, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch e := getenv("OTEL_TRACES_EXPORTER"); e {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: mcpgen exports traces with OTLP over HTTP only (\"otlp\", or \"none\" for no traces)", e)
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if base == "" {
			return nil, nil
		}
		endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP traces endpoint %q: want an http:// or https:// URL, such as http://127.0.0.1:4318", endpoint)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "grpc" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: mcpgen exports traces over OTLP/HTTP (JSON); set it to http/json or http/protobuf, and the endpoint to the receiver's HTTP port (4318 by default)")
	}
	headers := map[string]string{}
	for _, v := range []string{getenv("OTEL_EXPORTER_OTLP_HEADERS"), getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS")} {
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" {
				continue
			}
			if dec, err := url.QueryUnescape(strings.TrimSpace(val)); err == nil {
				val = dec
			}
			headers[strings.TrimSpace(k)] = val
		}
	}
	service := getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = "mcpgen"
	}
	return &Config{Endpoint: endpoint, Headers: headers, Service: service}, nil
}

// New returns a Tracer that exports to cfg (nil: a nil Tracer), its spans
// of the workspace's resource.
func New(cfg *Config, workspace string, log *slog.Logger) *Tracer {
	if cfg == nil {
		return nil
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", cfg.Service),
		attribute.String("mcpgen.workspace", workspace),
	)
	exp := newExporter(cfg, log)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSpanProcessor(newBatcher(exp)),
	)
	return &Tracer{tp: tp, t: tp.Tracer("github.com/mcpgen/mcpgen/launcher")}
}

// Shutdown exports what waits, within ctx, and stops.
func (t *Tracer) Shutdown(ctx context.Context) {
	if t != nil {
		_ = t.tp.Shutdown(ctx)
	}
}

var propagator = propagation.TraceContext{}

// A Span is one hop of a call; nil (a nil Tracer's) records nothing.
type Span struct{ s trace.Span }

// Start begins a span, the child of the agent's (traceparent and
// tracestate, as its request's _meta carried them; "" for none: a root),
// and returns it with the traceparent and tracestate to pass on (the new
// span's). A nil Tracer returns nil and the agent's own, unchanged.
func (t *Tracer) Start(name string, kind trace.SpanKind, traceparent, tracestate string, attrs ...attribute.KeyValue) (span *Span, parent, state string) {
	if t == nil {
		return nil, traceparent, tracestate
	}
	ctx := context.Background()
	if traceparent != "" {
		ctx = propagator.Extract(ctx, &carrier{traceparent, tracestate})
	}
	ctx, s := t.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	var out carrier
	propagator.Inject(ctx, &out)
	return &Span{s}, out.parent, out.state
}

// End ends the span: failed (with why) when the call failed, a tool's
// error result included.
func (s *Span) End(failed bool, why string) {
	if s == nil {
		return
	}
	if failed {
		s.s.SetStatus(codes.Error, why)
	}
	s.s.End()
}

// carrier is a W3C trace context's two headers, as propagation reads and
// writes them.
type carrier struct{ parent, state string }

func (c *carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Kinds of span the launcher makes: the gateway serves the agent's call;
// the hub calls the server.
const (
	Server = trace.SpanKindServer
	Client = trace.SpanKindClient
)
