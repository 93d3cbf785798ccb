package claude

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Entry is one server that mcpgen owns: its name and its JSON object, compact or not.
type Entry = providers.Rendered

// MergeOptions changes how Merge treats servers that mcpgen does not own.
type MergeOptions = providers.MergeOptions

// format is Claude's: mcpServers in strict JSON, re-indented on every write, as Claude
// itself writes ~/.claude.json.
var format = jsonfile.Format{Agent: "Claude", ServersKey: serversKey, Reindent: true}

const serversKey = "mcpServers"

// Merge returns existing with the servers of entries merged into its mcpServers object
// (see jsonfile.Merge): re-indented with two spaces, as Claude writes its files.
func Merge(existing []byte, entries []Entry, opts MergeOptions) ([]byte, error) {
	return jsonfile.Merge(format, existing, entries, opts)
}

// Owners returns the servers of a Claude config that _mcpgen records, in the order of
// mcpServers, each with the manifest its record names ("" when it names none).
func Owners(data []byte) ([]providers.Owned, error) {
	return jsonfile.Owners(format, data)
}
