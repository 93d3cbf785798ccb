// Package translate carries a request that needs an agent's input across
// the two eras of MCP, for the launcher's hub (and so for the gateway,
// whose sessions are the hubs' clients).
//
// A legacy server asks for input with a request of its own, sent while it
// works on a call (elicitation/create, sampling/createMessage); a modern
// server answers the call with an input_required result, and the client
// retries the call with its answers (multi round-trip requests). Between a
// legacy server and a modern agent, the server's request is held: the
// agent's call gets an input_required result whose requestState names the
// held call (signed here: see Signer), and the agent's retry answers the
// server's request (see Table). Between a modern server and a legacy
// agent, an input_required result is answered by asking the agent the
// server's requests, and the call is retried upstream with the answers
// (see Answer): the agent sees one call.
package translate

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// A State is what a requestState given to a modern agent says, under the
// launcher's signature: which held call it resumes, for which agent, on
// which request, until when.
type State struct {
	Held    uint64    // the held call's number, unique in its Table
	Agent   uint64    // the agent's number, unique in the session
	Method  string    // the request's method
	Digest  Digest    // of the request's salient params (see DigestOf)
	Expires time.Time // after which the state is refused
}

// A Digest identifies a request's salient params: what makes a retry the
// same request as the call it resumes.
type Digest [sha256.Size]byte

// A Signer seals States into requestStates and opens them, with a key of
// its own that never leaves the process: a state is valid only for the
// launcher that made it, in the session that made it.
type Signer struct {
	key [32]byte
}

// NewSigner returns a Signer with a new random key.
func NewSigner() *Signer {
	s := &Signer{}
	if _, err := rand.Read(s.key[:]); err != nil {
		panic(err) // crypto/rand does not fail on the platforms Go supports
	}
	return s
}

// statePrefix marks a requestState of mcpgen's, and its format's version.
const statePrefix = "mcpgen1."

// Seal returns st as a requestState: the prefix, then base64url of the
// state and its HMAC-SHA256.
func (s *Signer) Seal(st State) string {
	body := make([]byte, 0, 8+8+8+len(st.Digest)+2+len(st.Method)+sha256.Size)
	body = binary.BigEndian.AppendUint64(body, st.Held)
	body = binary.BigEndian.AppendUint64(body, st.Agent)
	body = binary.BigEndian.AppendUint64(body, uint64(st.Expires.UnixMilli()))
	body = append(body, st.Digest[:]...)
	body = binary.BigEndian.AppendUint16(body, uint16(len(st.Method)))
	body = append(body, st.Method...)
	body = append(body, s.mac(body)...)
	return statePrefix + base64.RawURLEncoding.EncodeToString(body)
}

func (s *Signer) mac(body []byte) []byte {
	m := hmac.New(sha256.New, s.key[:])
	m.Write(body)
	return m.Sum(nil)
}

// maxStateLen bounds the requestStates that Open reads: a method is short.
const maxStateLen = 512

// errForged is why a state is refused that this launcher did not sign as
// it is: altered, made up, or from another session.
var errForged = errors.New("it is not one that mcpgen gave in this session (altered, or from another launcher)")

// Open reads a requestState that Seal made, and checks its signature; it
// does not check what the state says (see Check).
func (s *Signer) Open(state string) (State, error) {
	var st State
	if len(state) > maxStateLen || len(state) < len(statePrefix) || state[:len(statePrefix)] != statePrefix {
		return st, errForged
	}
	body, err := base64.RawURLEncoding.DecodeString(state[len(statePrefix):])
	if err != nil || len(body) < 8+8+8+len(st.Digest)+2+sha256.Size {
		return st, errForged
	}
	signed, tag := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if !hmac.Equal(tag, s.mac(signed)) {
		return st, errForged
	}
	st.Held = binary.BigEndian.Uint64(signed)
	st.Agent = binary.BigEndian.Uint64(signed[8:])
	st.Expires = time.UnixMilli(int64(binary.BigEndian.Uint64(signed[16:])))
	copy(st.Digest[:], signed[24:])
	rest := signed[24+len(st.Digest):]
	n := int(binary.BigEndian.Uint16(rest))
	if len(rest) != 2+n {
		return st, errForged
	}
	st.Method = string(rest[2:])
	return st, nil
}

// Check checks that st is for this retry: the agent's (agent), of the
// same request (method, digest), and not expired at now.
func (st *State) Check(agent uint64, method string, digest Digest, now time.Time) error {
	switch {
	case st.Agent != agent:
		return errors.New("it was given to another client")
	case st.Method != method:
		return fmt.Errorf("it was given for a %s, not a %s", st.Method, method)
	case st.Digest != digest:
		return errors.New("it was given for a call with other arguments (retry the call as it was, with only inputResponses and requestState added)")
	case now.After(st.Expires):
		return errExpired
	}
	return nil
}

var errExpired = errors.New("it expired: the call waited for its input longer than the server's input_timeout, and was cancelled")

// Translatable reports whether a request of method may need input in the
// middle: the requests that the modern revision lets a server answer with
// input_required.
func Translatable(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// DigestOf returns the digest of a request's salient params: for a tool
// or a prompt its name and arguments, for a resource its uri; the rest
// (_meta, inputResponses, requestState) does not count. The arguments
// count as written, spacing aside: a retry carries them as the call did
// (clients send the same params again), and re-encoding them in a canonical
// order would cost every call that may be held what few retries need.
func DigestOf(method string, params json.RawMessage) (Digest, error) {
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return Digest{}, mcp.NewError(mcp.CodeInvalidParams, "invalid params: %v", err)
	}
	var name, uri, args []byte
	for _, mb := range members {
		switch mb.Key {
		case "name":
			name = mb.Value
		case "uri":
			uri = mb.Value
		case "arguments":
			args = mb.Value
		}
	}
	args = bytes.TrimSpace(args)
	b := bytes.NewBuffer(make([]byte, 0, len(method)+len(name)+len(uri)+len(args)+3))
	for _, v := range [][]byte{[]byte(method), name, uri} {
		b.Write(v)
		b.WriteByte(0)
	}
	if len(args) > 0 && string(args) != "null" {
		if err := stdjson.Compact(b, args); err != nil {
			return Digest{}, mcp.NewError(mcp.CodeInvalidParams, "invalid params: arguments: %v", err)
		}
	}
	return sha256.Sum256(b.Bytes()), nil
}
