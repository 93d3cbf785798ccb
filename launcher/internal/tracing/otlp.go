package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter sends spans to an OTLP/HTTP receiver in OTLP's JSON encoding
// (the OTLP specification's JSON mapping of the protobuf messages: ids in
// hex, 64-bit integers as strings, enums as numbers).
type exporter struct {
	cfg    *Config
	client *http.Client
	log    *slog.Logger

	mu     sync.Mutex
	failed bool // the last export failed: logged once until one succeeds
}

func newExporter(cfg *Config, log *slog.Logger) *exporter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &exporter{cfg: cfg, client: &http.Client{Timeout: 10 * time.Second}, log: log}
}

// The OTLP JSON messages, as much of them as the launcher's spans use.
type (
	exportRequest struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}
	resourceSpans struct {
		Resource   otlpResource `json:"resource"`
		ScopeSpans []scopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []keyValue `json:"attributes"`
	}
	scopeSpans struct {
		Scope scope      `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	scope struct {
		Name string `json:"name"`
	}
	otlpSpan struct {
		TraceID      string     `json:"traceId"`
		SpanID       string     `json:"spanId"`
		ParentSpanID string     `json:"parentSpanId,omitempty"`
		TraceState   string     `json:"traceState,omitempty"`
		Name         string     `json:"name"`
		Kind         int        `json:"kind"`
		Start        string     `json:"startTimeUnixNano"`
		End          string     `json:"endTimeUnixNano"`
		Attributes   []keyValue `json:"attributes,omitempty"`
		Status       status     `json:"status"`
	}
	status struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	keyValue struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	anyValue struct {
		String *string  `json:"stringValue,omitempty"`
		Bool   *bool    `json:"boolValue,omitempty"`
		Int    *string  `json:"intValue,omitempty"`
		Double *float64 `json:"doubleValue,omitempty"`
	}
)

func attributes(kvs []attribute.KeyValue) []keyValue {
	out := make([]keyValue, 0, len(kvs))
	for _, kv := range kvs {
		var v anyValue
		switch kv.Value.Type() {
		case attribute.BOOL:
			b := kv.Value.AsBool()
			v.Bool = &b
		case attribute.INT64:
			s := strconv.FormatInt(kv.Value.AsInt64(), 10)
			v.Int = &s
		case attribute.FLOAT64:
			f := kv.Value.AsFloat64()
			v.Double = &f
		default:
			s := kv.Value.Emit()
			v.String = &s
		}
		out = append(out, keyValue{Key: string(kv.Key), Value: v})
	}
	return out
}

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// ExportSpans sends spans in one request, grouped by resource and scope as
// the SDK gives them (the launcher has one of each).
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	var req exportRequest
	var rs *resourceSpans
	for _, s := range spans {
		if rs == nil {
			req.ResourceSpans = append(req.ResourceSpans, resourceSpans{
				Resource:   otlpResource{Attributes: attributes(s.Resource().Attributes())},
				ScopeSpans: []scopeSpans{{Scope: scope{Name: s.InstrumentationScope().Name}}},
			})
			rs = &req.ResourceSpans[0]
		}
		sc := s.SpanContext()
		span := otlpSpan{
			TraceID:    sc.TraceID().String(),
			SpanID:     sc.SpanID().String(),
			TraceState: sc.TraceState().String(),
			Name:       s.Name(),
			Kind:       int(s.SpanKind()),
			Start:      nanos(s.StartTime()),
			End:        nanos(s.EndTime()),
			Attributes: attributes(s.Attributes()),
		}
		if p := s.Parent(); p.IsValid() {
			span.ParentSpanID = p.SpanID().String()
		}
		switch st := s.Status(); st.Code {
		case codes.Error:
			span.Status = status{Code: 2, Message: st.Description}
		case codes.Ok:
			span.Status = status{Code: 1}
		}
		rs.ScopeSpans[0].Spans = append(rs.ScopeSpans[0].Spans, span)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	err = e.post(ctx, body)
	e.mu.Lock()
	first := err != nil && !e.failed
	e.failed = err != nil
	e.mu.Unlock()
	if first {
		// Once until an export succeeds: a receiver that is down does not
		// fill the log.
		e.log.Warn("tracing: spans could not be exported", "endpoint", e.cfg.Endpoint, "error", err)
	}
	return err
}

func (e *exporter) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}

// Shutdown has nothing to release: each export is one request.
func (e *exporter) Shutdown(context.Context) error { return nil }
