package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// MaxName is the longest tool or prompt name the gateway exposes: what
// Claude Code and Codex accept, with ValidName's characters.
const MaxName = 64

// Separator joins a server's name and a tool's in a prefixed name,
// SERVER__TOOL, as mcp-hub and Codex's own names do.
const Separator = "__"

// hashLen is the length of the hash suffix of a shortened name ("_" and
// eight hex digits): 32 bits of the server's and the tool's names.
const hashLen = 9

// ValidName reports whether name can be exposed as it is: 1 to MaxName
// characters of [A-Za-z0-9_-].
func ValidName(name string) bool {
	if name == "" || len(name) > MaxName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

func nameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// A key is one tool (or prompt) of one server.
type key struct{ server, name string }

// assignNames names every item by the gateway's rule. An item whose name
// no other server uses keeps it (unless always); the items of a name that
// several servers use are all named SERVER__NAME, and the bare name is
// not used. A name that is not valid (too long, other characters) is
// shortened: its invalid characters become "_", it is cut, and a hash of
// the server's and the item's names is appended, so the same item gets the
// same name whenever the workspace has the same items. Names that still
// collide (a server's item named like another's prefixed one) are all
// hashed. items must not repeat a key; the result is in items' order.
func assignNames(items []key, always bool) []string {
	servers := make(map[string]map[string]bool, len(items))
	for _, it := range items {
		if servers[it.name] == nil {
			servers[it.name] = map[string]bool{}
		}
		servers[it.name][it.server] = true
	}
	base := make([]string, len(items))
	out := make([]string, len(items))
	for i, it := range items {
		base[i] = it.name
		if always || len(servers[it.name]) > 1 {
			base[i] = it.server + Separator + it.name
		}
		out[i] = base[i]
		if !ValidName(out[i]) {
			out[i] = shorten(base[i], it, 0)
		}
	}
	// A hash depends only on its item and the round, so the outcome does
	// not depend on the order in which collisions are found. Four rounds
	// end every collision but that of two items hashing alike four times
	// over: those keep the first and name the others by their position.
	for round := 1; round <= 4; round++ {
		groups := make(map[string][]int, len(out))
		for i, n := range out {
			groups[n] = append(groups[n], i)
		}
		again := false
		for _, idx := range groups {
			if len(idx) < 2 {
				continue
			}
			again = true
			for _, i := range idx {
				out[i] = shorten(base[i], items[i], round)
			}
		}
		if !again {
			return out
		}
	}
	seen := make(map[string]bool, len(out))
	for i, n := range out {
		if seen[n] {
			out[i] = shorten(base[i], items[i], 5+i)
		}
		seen[out[i]] = true
	}
	return out
}

// shorten makes a valid name of name: invalid characters become "_" (one
// per character, not per byte), the result is cut so that the hash suffix
// fits, and "_" and the hash of the item (and of the round, after a
// collision) follow.
func shorten(name string, it key, round int) string {
	b := make([]byte, 0, MaxName)
	for _, r := range name {
		if len(b) == MaxName-hashLen {
			break
		}
		if r < 0x80 && nameByte(byte(r)) {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	h := sha256.New()
	h.Write([]byte(it.server))
	h.Write([]byte{0})
	h.Write([]byte(it.name))
	if round > 0 {
		h.Write([]byte{0})
		h.Write(strconv.AppendInt(nil, int64(round), 10))
	}
	sum := h.Sum(nil)
	b = append(b, '_')
	return string(hex.AppendEncode(b, sum[:(hashLen-1)/2]))
}
