package tracing

import (
	"strings"
	"testing"
)

func TestReadEnv(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      map[string]string
		endpoint string // "" for no tracing
		err      string
	}{
		{"nothing set", nil, "", ""},
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"}, "http://127.0.0.1:4318/v1/traces", ""},
		{"traces endpoint as it is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b:2/custom"}, "https://b:2/custom", ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_TRACES_EXPORTER": "none"}, "", ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_SDK_DISABLED": "true"}, "", ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "", "OTLP/HTTP"},
		{"another exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "", "OTLP over HTTP only"},
		{"not a URL", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4318"}, "", "http:// or https://"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ReadEnv(func(k string) string { return c.env[k] })
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want one saying %q", err, c.err)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case c.endpoint == "" && cfg != nil:
				t.Errorf("tracing on (%+v), want off", cfg)
			case c.endpoint != "" && (cfg == nil || cfg.Endpoint != c.endpoint || cfg.Service != "mcpgen"):
				t.Errorf("config %+v, want endpoint %s", cfg, c.endpoint)
			}
		})
	}
	cfg, _ := ReadEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20x, x-tenant = t1", "OTEL_SERVICE_NAME": "gw"}[k]
	})
	if cfg.Headers["authorization"] != "Bearer x" || cfg.Headers["x-tenant"] != "t1" || cfg.Service != "gw" {
		t.Errorf("headers and service: %+v", cfg)
	}
}

// A nil Tracer makes nothing, and passes the agent's trace context on as
// it is.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	span, parent, state := tr.Start("x", Server, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v")
	if span != nil || parent != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" || state != "k=v" {
		t.Errorf("nil tracer: %v %q %q", span, parent, state)
	}
	span.End(true, "nothing") // no panic
}
