package metrics

import (
	"cmp"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
)

// processStart is when this process began (near enough: its packages'
// initialization), for process_start_time_seconds.
var processStart = time.Now()

// helpEscaper escapes a HELP text as the format asks: backslash and line
// feed.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// A writer writes Prometheus' text exposition format (version 0.0.4):
// each family's HELP and TYPE, then its samples, a label set's labels in
// the order given (callers give them sorted by name).
type writer struct{ b []byte }

func (w *writer) family(name, typ, help string) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, helpEscaper.Replace(help)...)
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, typ...)
	w.b = append(w.b, '\n')
}

// sample writes one sample: name, labels as name/value pairs, and value.
func (w *writer) sample(name string, value float64, labels ...string) {
	w.b = append(w.b, name...)
	if len(labels) > 0 {
		w.b = append(w.b, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, labels[i]...)
			w.b = append(w.b, `="`...)
			w.b = appendLabelValue(w.b, labels[i+1])
			w.b = append(w.b, '"')
		}
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ' ')
	w.b = appendFloat(w.b, value)
	w.b = append(w.b, '\n')
}

// appendLabelValue escapes a label value as the format asks: backslash,
// double quote and line feed.
func appendLabelValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// exposition writes every family, by name's prefix as Prometheus' own
// clients order them: the Go runtime's, the session's (read from its
// snapshot, then what it counted), the process's.
func (s *Set) exposition() []byte {
	w := &writer{b: make([]byte, 0, 16<<10)}
	writeGo(w)
	snap := s.snapshot()

	count := make(map[string]int, len(States))
	for _, v := range snap.Servers {
		count[v.State]++
	}
	w.family("mcpgen_servers", "gauge", "Servers of the workspace, by state.")
	for _, state := range slices.Sorted(slices.Values(States)) {
		w.sample("mcpgen_servers", float64(count[state]), "state", state)
	}
	w.family("mcpgen_server_restarts_total", "counter", "Restarts of each server after a crash, a failed ping or a restart request, as status shows them.")
	servers := slices.Clone(snap.Servers)
	slices.SortFunc(servers, func(a, b Server) int { return cmp.Compare(a.Name, b.Name) })
	for _, v := range servers {
		w.sample("mcpgen_server_restarts_total", float64(v.Restarts), "server", v.Name)
	}
	w.family("mcpgen_clients", "gauge", "Agents connected, by face: hub (connect NAME), gateway (connect --workspace), http.")
	for _, face := range slices.Sorted(slices.Values(Faces)) {
		w.sample("mcpgen_clients", float64(snap.Clients[face]), "face", face)
	}
	w.family("mcpgen_queued_bytes", "gauge", "Bytes waiting to be written to agents, all faces together.")
	w.sample("mcpgen_queued_bytes", float64(snap.Queued))
	w.family("mcpgen_requests_in_flight", "gauge", "Agents' requests that the servers are answering.")
	w.sample("mcpgen_requests_in_flight", float64(snap.InFlight))

	s.writeCalls(w)

	w.family("mcpgen_idle_stops_total", "counter", "Servers stopped for idleness (idle_timeout), by server.")
	s.mu.Lock()
	idle := make(map[string]uint64, len(s.idleStops))
	for name, n := range s.idleStops {
		idle[name] = n.Load()
	}
	s.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(idle)) {
		w.sample("mcpgen_idle_stops_total", float64(idle[name]), "server", name)
	}
	w.family("mcpgen_reloads_total", "counter", "Reloads of the manifest, by result (ok, failed).")
	w.sample("mcpgen_reloads_total", float64(s.reloadsFailed.Load()), "result", "failed")
	w.sample("mcpgen_reloads_total", float64(s.reloadsOK.Load()), "result", "ok")
	w.family("mcpgen_last_reload_success", "gauge", "1 if the last load of the manifest succeeded, 0 if it failed (the previous manifest still runs).")
	ok := 0.0
	if s.reloadOK.Load() {
		ok = 1
	}
	w.sample("mcpgen_last_reload_success", ok)
	w.family("mcpgen_last_reload_timestamp_seconds", "gauge", "When the manifest was last loaded, or a load failed, in seconds since the epoch.")
	w.sample("mcpgen_last_reload_timestamp_seconds", float64(s.reloadAt.Load())/1e9)

	writeProcess(w)
	return w.b
}

// writeCalls writes the tool calls' counts and latency histograms.
func (s *Set) writeCalls(w *writer) {
	type series struct {
		server, tool string
		m            *toolMeter
	}
	s.mu.Lock()
	var all []series
	for name, c := range s.servers {
		c.tools.Range(func(k, v any) bool {
			all = append(all, series{name, k.(string), v.(*toolMeter)})
			return true
		})
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b series) int {
		return cmp.Or(cmp.Compare(a.server, b.server), cmp.Compare(a.tool, b.tool))
	})
	outcomes := make([]hub.Outcome, 0, hub.Outcomes)
	for o := range hub.Outcomes {
		outcomes = append(outcomes, o)
	}
	slices.SortFunc(outcomes, func(a, b hub.Outcome) int { return cmp.Compare(a.String(), b.String()) })

	w.family("mcpgen_tool_calls_total", "counter", "Tool calls answered, by server, tool and outcome (ok, tool_error, error, timeout, cancelled).")
	for _, x := range all {
		for _, o := range outcomes {
			w.sample("mcpgen_tool_calls_total", float64(x.m.calls[o].Load()), "outcome", o.String(), "server", x.server, "tool", x.tool)
		}
	}
	const h = "mcpgen_tool_call_duration_seconds"
	w.family(h, "histogram", "How long tool calls took, from the hub's taking them to their answer, by server and tool.")
	for _, x := range all {
		// The count first: a bucket read after it may hold a call it
		// missed, never fewer than it says.
		total := x.m.count.Load()
		var cumulative uint64
		for i, le := range latencyBuckets {
			cumulative += x.m.buckets[i].Load()
			w.sample(h+"_bucket", float64(min(cumulative, total)), "server", x.server, "tool", x.tool, "le", strconv.FormatFloat(le, 'g', -1, 64))
		}
		w.sample(h+"_bucket", float64(total), "server", x.server, "tool", x.tool, "le", "+Inf")
		w.sample(h+"_sum", math.Float64frombits(x.m.sumBits.Load()), "server", x.server, "tool", x.tool)
		w.sample(h+"_count", float64(total), "server", x.server, "tool", x.tool)
	}
}

// writeProcess writes the process's metrics, under the names Prometheus'
// own clients give them.
func writeProcess(w *writer) {
	w.family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.")
	w.sample("process_start_time_seconds", float64(processStart.UnixNano())/1e9)
	if cpu, ok := processCPU(); ok {
		w.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.")
		w.sample("process_cpu_seconds_total", cpu.Seconds())
	}
	if rss, ok := residentBytes(); ok {
		w.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
		w.sample("process_resident_memory_bytes", float64(rss))
	}
	if fds, ok := openFDs(); ok {
		w.family("process_open_fds", "gauge", "Number of open file descriptors.")
		w.sample("process_open_fds", float64(fds))
	}
}

// writeGo writes the Go runtime's metrics, under the names Prometheus' own
// clients give them.
func writeGo(w *writer) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.family("go_goroutines", "gauge", "Number of goroutines that currently exist.")
	w.sample("go_goroutines", float64(runtime.NumGoroutine()))
	w.family("go_memstats_heap_inuse_bytes", "gauge", "Number of heap bytes that are in use.")
	w.sample("go_memstats_heap_inuse_bytes", float64(ms.HeapInuse))
	w.family("go_memstats_sys_bytes", "gauge", "Number of bytes obtained from system.")
	w.sample("go_memstats_sys_bytes", float64(ms.Sys))
	w.family("go_gc_cycles_total", "counter", "Garbage collection cycles completed.")
	w.sample("go_gc_cycles_total", float64(ms.NumGC))
}
