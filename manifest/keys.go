package manifest

import (
	"slices"
	"strings"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/mcp"
)

// The tables below are the one list of the manifest's keys: the decoder
// dispatches each key it reads through them (a key that is not in a table
// is unknown), and Schema writes the JSON Schema from them. A key's value
// type is checked twice, by its decode function and by the schema;
// TestKeyTablesAgree decodes a value of the stated type and one of another
// type for every key, so that the two cannot drift apart.

// valueType is the type of a key's value, as the schema states it.
type valueType int

const (
	typeString   valueType = iota // a string
	typeTemplate                  // a string that may hold ${VAR} references
	typeBool
	typeInteger
	typeNumber
	typeDuration // a positive Go duration: "30s", "1m30s"
	typeSize     // a size: bytes as an integer, or a string with a unit ("512M")
	typeStrings  // an array of strings
	typeArgv     // an array of strings that may hold ${VAR}, not empty: a command and its arguments
	typeGlobs    // an array of glob patterns
	typeVars     // a table of strings (templates), its keys matching names
	typeContext  // true, false, or an array of variable names
	typeTable    // a table of the keys in keys
	typeMap      // a table of tables, each named by names and holding the keys in keys
	typeScalar   // a string, integer, number or boolean
	typeScalars  // a non-empty array of scalars
	typeNetwork  // one of NetworkModes, or a non-empty array of host:port
)

// keySpec describes one key: what the schema says of it, and which server
// kinds allow it.
type keySpec struct {
	name string
	typ  valueType
	doc  string
	// kinds lists the server kinds that allow the key; nil: every kind.
	kinds []Kind
	// kind is set on the key that makes a server of that kind
	// (command, builtin, tools, url).
	kind bool
	// builtin names the built-in server that the key is an option of.
	builtin string
	enum    []string // the values a string (or each element) may take
	pattern pattern  // the form of a string
	// names is the form of the keys of a typeVars or typeMap table.
	names pattern
	// notNames are key names that names would allow but that are refused.
	notNames []string
	// keys are the keys of a typeTable, or of each table of a typeMap:
	// a keyTable, which the schema reads when it is written.
	keys specTable
	// min and max bound a typeNumber, or a typeInteger when max > 0.
	min, max float64
	// nonEmpty: a string must not be blank, a table must hold a key.
	nonEmpty bool
	// constant is the only value a typeInteger may take, when not zero.
	constant int64
	// elemPattern is the form of each element of a typeStrings.
	elemPattern pattern
	// def is the default, as the schema shows it.
	def any
	// requires names the keys of the same table that this key needs set
	// beside it, and requiresWhy says why, for the error.
	requires    []string
	requiresWhy string
	// needsOne, on a typeTable, names keys of which the table must set
	// at least one, and needsOneWhy says what the table is then for.
	needsOne    []string
	needsOneWhy string
}

// allows reports whether a server of kind k may set the key.
func (s *keySpec) allows(k Kind) bool {
	return s.kinds == nil || slices.Contains(s.kinds, k)
}

// key is a keySpec with the function that decodes its value into a T.
type key[T any] struct {
	keySpec
	decode func(d *decoder, path []string, v any, into T)
}

// keyTable is the keys of one kind of table, in the order documented.
type keyTable[T any] []key[T]

func (t keyTable[T]) find(name string) (*key[T], bool) {
	for i := range t {
		if t[i].name == name {
			return &t[i], true
		}
	}
	return nil, false
}

func (t keyTable[T]) names() []string {
	names := make([]string, len(t))
	for i, k := range t {
		names[i] = k.name
	}
	return names
}

// specTable is a keyTable of any T, as the schema reads it.
type specTable interface{ specs() []keySpec }

func (t keyTable[T]) specs() []keySpec {
	specs := make([]keySpec, len(t))
	for i, k := range t {
		specs[i] = k.keySpec
	}
	return specs
}

// ProtocolAuto is the protocol key's default: the server's era is asked.
const ProtocolAuto = "auto"

// Protocols are the values of the protocol key: auto, and every revision
// that mcpgen speaks, modern first.
var Protocols = append([]string{ProtocolAuto}, mcp.AllVersions()...)

// stdioKinds are the kinds of servers that run as local processes.
var stdioKinds = []Kind{KindCommand, KindBuiltin, KindDeclared}

// durationDoc ends the doc of every duration.
const durationDoc = ` A Go duration: "30s", "1m30s", "500ms".`

// topKeys are the keys of the manifest's top level.
var topKeys = keyTable[*Manifest]{
	{keySpec{name: "version", typ: typeInteger, constant: 1, def: int64(1),
		doc: "The manifest format's version: 1, the only one. Optional."},
		func(d *decoder, p []string, v any, m *Manifest) {
			switch n := v.(type) {
			case int64:
				if n != 1 {
					d.valueError(p, "unsupported version %v: this mcpgen reads version 1", n)
				}
			default:
				d.valueError(p, "\"version\" must be the integer 1, not %s", describe(n))
			}
		}},
	{keySpec{name: "name", typ: typeString, pattern: ownerName,
		doc: "The manifest's own stable id. It marks the entries this manifest writes into configs that several manifests share (~/.codex/config.toml, ~/.claude.json), so that each one replaces and removes only its own. Default: the manifest's path."},
		func(d *decoder, p []string, v any, m *Manifest) {
			if s, ok := d.str(p, v); ok {
				if !ownerName.MatchString(s) {
					d.valueError(p, "\"name\" %q is not valid: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", s)
				}
				m.Name = s
			}
		}},
	{keySpec{name: "prefix", typ: typeString, pattern: prefixName,
		doc: "Put before every server's name in the entries of shared (user-scope) configs, so that two projects' servers of the same name can live side by side: prefix = \"acme-\" writes acme-files. Project configs (.mcp.json, .codex/config.toml) keep the names as they are."},
		func(d *decoder, p []string, v any, m *Manifest) {
			if s, ok := d.str(p, v); ok {
				if !prefixName.MatchString(s) {
					d.valueError(p, "\"prefix\" %q is not valid: use 1 to 32 letters, digits, _ or -, such as \"acme-\"", s)
				}
				m.Prefix = s
			}
		}},
	{keySpec{name: "workspace", typ: typeTable, keys: &workspaceKeys,
		doc: "How a workspace id maps to the context that every stdio server receives: WORKSPACE_ID, WORKSPACE_DIR, USER_ID and the vars."},
		func(d *decoder, p []string, v any, m *Manifest) { m.Workspace = d.workspace(p, v) }},
	{keySpec{name: "session", typ: typeTable, keys: &sessionKeys,
		doc: "How a launcher (mcpgen launch) of this manifest behaves."},
		func(d *decoder, p []string, v any, m *Manifest) { m.Session = d.session(p, v) }},
	{keySpec{name: "gateway", typ: typeTable, keys: &gatewayKeys,
		doc: "How the workspace gateway presents the workspace's servers."},
		func(d *decoder, p []string, v any, m *Manifest) { m.Gateway = d.gateway(p, v) }},
	{keySpec{name: "sandbox", typ: typeTable, keys: &sandboxKeys,
		doc: "The defaults of every stdio server's sandbox; a server's own [servers.NAME.sandbox] keys replace them, key by key."},
		func(d *decoder, p []string, v any, m *Manifest) { m.SandboxDefaults = d.sandbox(p, v) }},
	{keySpec{name: "servers", typ: typeMap, names: serverName, notNames: ReservedNames, keys: &serverKeys,
		doc: "The MCP servers, one table each: [servers.NAME]. A server is exactly one kind, chosen by one key: command (a stdio process), builtin (shipped in mcpgen), tools (declared here, each tool a command) or url (remote)."},
		nil}, // decoded by manifest, once the workspace variables are known
}

var workspaceKeys = keyTable[*Workspace]{
	{keySpec{name: "dir", typ: typeTemplate,
		doc: "WORKSPACE_DIR: the workspace's directory, such as \"/srv/workspaces/${WORKSPACE_ID}\". Relative to the manifest's directory. Default: the manifest's directory, wherever in the project the agent starts (--dir overrides); \"${PWD}\": the directory mcpgen runs in, where the agent started it."},
		func(d *decoder, p []string, v any, w *Workspace) {
			if s, ok := d.str(p, v); ok {
				w.Dir = d.template(p, s)
			}
		}},
	{keySpec{name: "user", typ: typeTemplate,
		doc: "USER_ID. Default: $USER (--user overrides)."},
		func(d *decoder, p []string, v any, w *Workspace) {
			if s, ok := d.str(p, v); ok {
				w.User = d.template(p, s)
			}
		}},
	{keySpec{name: "vars", typ: typeVars, names: varName, notNames: []string{VarWorkspaceID, VarWorkspaceDir, VarUserID},
		doc: "More context, passed to every stdio server like WORKSPACE_ID, WORKSPACE_DIR and USER_ID. Each value may use those and the vars before it."},
		func(d *decoder, p []string, v any, w *Workspace) {
			w.Vars = d.vars(p, v, varName, "variable name (letters, digits and _, not starting with a digit)")
			for _, v := range w.Vars {
				if v.Name == VarWorkspaceID || v.Name == VarWorkspaceDir || v.Name == VarUserID {
					d.keyError(child(p, v.Name), "%q is set by mcpgen itself; choose another name", v.Name)
				}
			}
		}},
}

var sessionKeys = keyTable[*Session]{
	{keySpec{name: "idle_exit", typ: typeDuration,
		doc: "A launcher with no client and no running server exits after this long." + durationDoc},
		func(d *decoder, p []string, v any, s *Session) { s.IdleExit = d.duration(p, v) }},
	{keySpec{name: "listen", typ: typeString, pattern: listenPattern,
		doc: "Serve the workspace over HTTP at host:port (port 0 picks a free one): the gateway at /mcp, each server at /servers/NAME/mcp. Anything but loopback needs [session.auth]. launch --listen overrides it."},
		func(d *decoder, p []string, v any, s *Session) {
			if str, ok := d.str(p, v); ok {
				if err := CheckListen(str); err != nil {
					d.valueError(p, "%q: %v", name(p), err)
				}
				s.Listen = str
			}
		}},
	{keySpec{name: "tls_cert", typ: typeString, nonEmpty: true, requires: []string{"tls_key"}, requiresWhy: "HTTPS needs the certificate and its private key",
		doc: "The certificate (PEM, the chain after it) of HTTPS, relative to the manifest's directory. Without tls_cert and tls_key, plain HTTP: for behind an ingress that terminates TLS."},
		func(d *decoder, p []string, v any, s *Session) { s.TLSCert = d.path(p, v) }},
	{keySpec{name: "tls_key", typ: typeString, nonEmpty: true, requires: []string{"tls_cert"}, requiresWhy: "HTTPS needs the certificate and its private key",
		doc: "The private key (PEM) of tls_cert, relative to the manifest's directory."},
		func(d *decoder, p []string, v any, s *Session) { s.TLSKey = d.path(p, v) }},
	{keySpec{name: "session_timeout", typ: typeDuration, def: "30m",
		doc: "An HTTP client's session that is unused for this long ends." + durationDoc},
		func(d *decoder, p []string, v any, s *Session) { s.SessionTimeout = d.duration(p, v) }},
	{keySpec{name: "metrics", typ: typeString, enum: metricsModes, def: MetricsAuth,
		doc: "Who may read /metrics (Prometheus) on the HTTP face: \"auth\", agents that the face admits, or \"open\", anyone who reaches the address (a scraper inside the cluster)."},
		func(d *decoder, p []string, v any, s *Session) {
			if str, ok := d.str(p, v); ok {
				if !slices.Contains(metricsModes, str) {
					d.valueError(p, "unknown metrics mode %q%s; use \"auth\" (/metrics behind the HTTP face's authentication) or \"open\" (anyone who reaches the address)", str, suggest(str, metricsModes)).Suggestion = closestOr(str, metricsModes)
				}
				s.Metrics = str
			}
		}},
	{keySpec{name: "drain_timeout", typ: typeDuration, def: "30s",
		doc: "On SIGTERM the launcher drains: it takes no new client, lets the requests under way finish, then stops its servers, all within this long (match the pod's terminationGracePeriodSeconds)." + durationDoc},
		func(d *decoder, p []string, v any, s *Session) { s.DrainTimeout = d.duration(p, v) }},
	{keySpec{name: "auth", typ: typeTable, keys: &authKeys,
		needsOne: authWays, needsOneWhy: authWaysWhy,
		doc: "How the HTTP face admits agents: bearer tokens (token_env, tokens_file), JWT access tokens of an OAuth issuer, or both."},
		func(d *decoder, p []string, v any, s *Session) { s.Auth = d.auth(p, v) }},
}

var metricsModes = []string{MetricsAuth, MetricsOpen}

// authWays are the keys of [session.auth] that admit agents: it needs one.
var authWays = []string{"token_env", "tokens_file", "issuer"}

const authWaysWhy = "admits no one: set token_env or tokens_file (bearer tokens), or issuer (the JWT access tokens of an OAuth server)"

// jwtWhy ends the errors of the keys that only JWTs use.
const jwtWhy = "it applies to the JWT access tokens of an issuer"

var authKeys = keyTable[*Auth]{
	{keySpec{name: "token_env", typ: typeString, pattern: varName,
		doc: "The name of the environment variable that holds a bearer token agents send (Authorization: Bearer ...). Read once when the launcher starts: the token is never in a file."},
		func(d *decoder, p []string, v any, a *Auth) {
			if str, ok := d.str(p, v); ok {
				if !varName.MatchString(str) {
					d.valueError(p, "%q names the variable that holds the token, e.g. \"MCPGEN_TOKEN\"; %q is not a variable name", name(p), str)
				}
				a.TokenEnv = str
			}
		}},
	{keySpec{name: "tokens_file", typ: typeString, nonEmpty: true,
		doc: "A file of bearer tokens, one a line (blank lines and # comments ignored), relative to the manifest's directory; read again when it changes."},
		func(d *decoder, p []string, v any, a *Auth) { a.TokensFile = d.path(p, v) }},
	{keySpec{name: "issuer", typ: typeString, pattern: httpURLPattern,
		doc: "The OAuth 2.1 authorization server whose JWT access tokens (RS256, ES256, EdDSA) admit an agent: their iss. An https URL (http on loopback only)."},
		func(d *decoder, p []string, v any, a *Auth) { a.Issuer = d.authURL(p, v, true, true) }},
	{keySpec{name: "audience", typ: typeString, pattern: httpURLPattern, requires: []string{"issuer"}, requiresWhy: jwtWhy,
		doc: "The aud a JWT must hold (the RFC 8707 resource): the URL agents reach. Default: the URL of the endpoint, scheme://listen/mcp."},
		func(d *decoder, p []string, v any, a *Auth) { a.Audience = d.authURL(p, v, false, false) }},
	{keySpec{name: "jwks_url", typ: typeString, pattern: httpURLPattern, requires: []string{"issuer"}, requiresWhy: jwtWhy,
		doc: "Where the issuer's signing keys (a JWK set) are. Default: the jwks_uri of the issuer's metadata (RFC 8414, else OpenID discovery). An https URL (http on loopback only)."},
		func(d *decoder, p []string, v any, a *Auth) { a.JWKSURL = d.authURL(p, v, false, true) }},
	{keySpec{name: "required_scopes", typ: typeStrings, elemPattern: scopeToken, requires: []string{"issuer"}, requiresWhy: jwtWhy,
		doc: "Scopes that a JWT must grant, every one (its scope or scp claim); a token without them gets 403 insufficient_scope."},
		func(d *decoder, p []string, v any, a *Auth) { a.RequiredScopes = d.scopes(p, v) }},
}

var gatewayPrefixes = []string{GatewayPrefixConflicts, GatewayPrefixAlways}

var gatewayToolsModes = []string{GatewayToolsAll, GatewayToolsSearch}

// gatewayToolName is the form of a name the gateway exposes: what Claude
// Code and Codex accept.
var gatewayToolName = lazyregexp.New(`^[A-Za-z0-9_-]{1,64}$`)

var gatewayKeys = keyTable[*Gateway]{
	{keySpec{name: "prefix", typ: typeString, enum: gatewayPrefixes, def: GatewayPrefixConflicts,
		doc: "How the gateway names tools: \"conflicts\" writes SERVER__TOOL only for names that two servers share, \"always\" for every tool."},
		func(d *decoder, p []string, v any, g *Gateway) {
			if s, ok := d.str(p, v); ok {
				if !slices.Contains(gatewayPrefixes, s) {
					d.valueError(p, "unknown prefix mode %q%s; use %s", s, suggest(s, gatewayPrefixes), strings.Join(gatewayPrefixes, " or ")).Suggestion = closestOr(s, gatewayPrefixes)
				}
				g.Prefix = s
			}
		}},
	{keySpec{name: "tools", typ: typeString, enum: gatewayToolsModes, def: GatewayToolsAll,
		doc: "What the gateway lists: \"all\" every tool of every server; \"search\" search_tools (which finds tools by what they do), call_tool (which calls them) and the pinned tools, so that an agent's context holds a summary instead of every schema. connect --tools chooses for one agent."},
		func(d *decoder, p []string, v any, g *Gateway) {
			if s, ok := d.str(p, v); ok {
				if !slices.Contains(gatewayToolsModes, s) {
					d.valueError(p, "unknown tools mode %q%s; use \"all\" (every tool) or \"search\" (search_tools, call_tool and the pinned tools)", s, suggest(s, gatewayToolsModes)).Suggestion = closestOr(s, gatewayToolsModes)
				}
				g.Tools = s
			}
		}},
	{keySpec{name: "pin", typ: typeStrings, elemPattern: gatewayToolName,
		doc: "Tools that search mode lists as themselves, beside search_tools and call_tool: their names as the gateway gives them (mcpgen tools ls shows them)."},
		func(d *decoder, p []string, v any, g *Gateway) { g.Pin = d.pins(p, v) }},
	{keySpec{name: "search_reveal", typ: typeBool, def: false,
		doc: "In search mode, list the tools an agent found from then on, and tell it (list_changed). Off by default: some agents reload their context at every list_changed."},
		func(d *decoder, p []string, v any, g *Gateway) { g.SearchReveal, _ = d.boolean(p, v) }},
}

// pins decodes [gateway] pin: names as the gateway exposes them, each once.
func (d *decoder) pins(p []string, v any) []string {
	names, ok := d.strs(p, v)
	if !ok {
		return nil
	}
	for i, n := range names {
		switch {
		case !gatewayToolName.MatchString(n):
			d.valueError(child(p, indexKey(i)), "%q: %q is not a tool name of the gateway: 1 to 64 letters, digits, _ or -, as mcpgen tools ls shows it (SERVER__TOOL when two servers share a name)", name(p), n)
		case slices.Contains(names[:i], n):
			d.valueError(child(p, indexKey(i)), "%q: %q is pinned twice; remove one", name(p), n)
		}
	}
	return names
}

// serverKeys are the keys of a [servers.NAME] table: first the four that
// choose its kind, then the others.
var serverKeys = keyTable[*Server]{
	{keySpec{name: "command", typ: typeTemplate, kind: true, kinds: []Kind{KindCommand}, nonEmpty: true,
		doc: "A stdio server: the program to run, a name found on PATH or a path (relative to the manifest's directory). Its arguments go in args, never in command."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				d.command(p, str)
				s.Command = d.template(p, str)
			}
		}},
	{keySpec{name: "builtin", typ: typeString, kind: true, kinds: []Kind{KindBuiltin}, enum: Builtins,
		doc: "A server shipped inside mcpgen: \"files\" (file tools confined to WORKSPACE_DIR)."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				if !slices.Contains(Builtins, str) {
					d.valueError(p, "unknown builtin %q%s; mcpgen has: %s", str, suggest(str, Builtins), strings.Join(Builtins, ", ")).Suggestion = closestOr(str, Builtins)
				}
				s.Builtin = str
			}
		}},
	{keySpec{name: "tools", typ: typeMap, kind: true, kinds: []Kind{KindDeclared}, names: toolName, keys: &toolKeys, nonEmpty: true,
		doc: "A server declared here: [servers.NAME.tools.TOOL] tables, each tool a command run without a shell."},
		func(d *decoder, p []string, v any, s *Server) { s.Tools = d.tools(p, v) }},
	{keySpec{name: "url", typ: typeTemplate, kind: true, kinds: []Kind{KindRemote}, pattern: lazyregexp.New(`^(https?://|\$\{)`),
		doc: "A remote server, reached over streamable HTTP: an absolute http or https URL."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				s.URL = d.template(p, str)
				d.checkURL(p, s.URL)
			}
		}},

	{keySpec{name: "description", typ: typeString, doc: "What the server is for."},
		func(d *decoder, p []string, v any, s *Server) { s.Description, _ = d.str(p, v) }},
	{keySpec{name: "enabled", typ: typeBool, def: true,
		doc: "false keeps the server out of launches and of Claude's configs (Codex gets it with enabled = false)."},
		func(d *decoder, p []string, v any, s *Server) { s.Enabled, _ = d.boolean(p, v) }},
	{keySpec{name: "providers", typ: typeStrings, enum: Providers, nonEmpty: true,
		doc: "The agents whose configs get the server. Default: all of them."},
		func(d *decoder, p []string, v any, s *Server) { s.Providers = d.providers(p, v) }},
	{keySpec{name: "scope", typ: typeString, enum: Scopes,
		doc: "The configs that get the server: \"project\" (a project's own: .mcp.json, .codex/config.toml) or \"user\" (the user's, which every project shares: ~/.codex/config.toml, ~/.claude.json, Claude Desktop's). mcpgen import sets \"project\" on a server from a project's config, so that it does not spill into the user's. Default: both."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				if !slices.Contains(Scopes, str) {
					d.valueError(p, "unknown scope %q%s; use %s", str, suggest(str, Scopes), strings.Join(Scopes, " or ")).Suggestion = closestOr(str, Scopes)
				}
				s.Scope = str
			}
		}},
	{keySpec{name: "env", typ: typeVars, kinds: stdioKinds, names: varName,
		doc: "Environment variables of the server; values may use ${VAR}. A ${VAR} that is not workspace context is a secret: emitted configs keep it a reference."},
		func(d *decoder, p []string, v any, s *Server) {
			s.Env = d.vars(p, v, varName, "environment variable name (letters, digits and _, not starting with a digit)")
		}},
	{keySpec{name: "cwd", typ: typeTemplate, kinds: stdioKinds,
		doc: "The server's working directory, relative to the manifest's directory. Default: the workspace directory."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				s.Cwd = d.template(p, str)
			}
		}},
	{keySpec{name: "startup_timeout", typ: typeDuration, def: "10s",
		doc: "How long the server may take to start and list its tools." + durationDoc},
		func(d *decoder, p []string, v any, s *Server) { s.StartupTimeout = d.duration(p, v) }},
	{keySpec{name: "tool_timeout", typ: typeDuration, def: "60s",
		doc: "How long one tool call may take." + durationDoc},
		func(d *decoder, p []string, v any, s *Server) { s.ToolTimeout = d.duration(p, v) }},
	{keySpec{name: "input_timeout", typ: typeDuration, def: "5m",
		doc: "How long a call of a legacy server that waits for a modern agent's input (elicitation, sampling) is held for the agent's retry before it is cancelled." + durationDoc},
		func(d *decoder, p []string, v any, s *Server) { s.InputTimeout = d.duration(p, v) }},
	{keySpec{name: "context", typ: typeContext, kinds: stdioKinds, def: true,
		doc: "Which context variables the server receives: true (all), false (none) or a list of names."},
		func(d *decoder, p []string, v any, s *Server) { s.Context = d.contextSelect(p, v, d.varNames) }},
	{keySpec{name: "enabled_tools", typ: typeStrings,
		doc: "The only tools the hub, the gateway and Codex expose (Codex's own key)."},
		func(d *decoder, p []string, v any, s *Server) {
			s.EnabledTools = d.toolNames(p, v)
			if s.EnabledTools == nil {
				s.EnabledTools = []string{}
			}
		}},
	{keySpec{name: "disabled_tools", typ: typeStrings,
		doc: "Tools the hub, the gateway and Codex hide (Codex's own key)."},
		func(d *decoder, p []string, v any, s *Server) { s.DisabledTools = d.toolNames(p, v) }},
	{keySpec{name: "start", typ: typeString, enum: []string{"eager", "lazy"}, def: "eager",
		doc: "\"lazy\": the launcher starts the server (a url server: opens its session) on first use, not at launch."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				switch str {
				case "eager":
				case "lazy":
					s.Lazy = true
				default:
					d.valueError(p, "\"start\" must be \"eager\" or \"lazy\", not %q", str)
				}
			}
		}},
	{keySpec{name: "protocol", typ: typeString, enum: Protocols, def: ProtocolAuto,
		doc: "The revision of MCP that the launcher speaks to the server: \"auto\" asks the server (server/discover, then initialize if it is legacy); \"" + mcp.ModernVersion + "\" the modern revision, without a handshake; a legacy revision such as \"" + mcp.LatestVersion + "\" the initialize handshake, asking that one."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				if !slices.Contains(Protocols, str) {
					d.valueError(p, "unknown protocol %q%s; use auto, %s (modern: no handshake) or a legacy revision: %s",
						str, suggest(str, Protocols), strings.Join(mcp.ModernVersions, ", "), strings.Join(mcp.SupportedVersions, ", ")).Suggestion = closestOr(str, Protocols)
					return
				}
				if str != ProtocolAuto {
					s.Protocol = str
				}
			}
		}},
	{keySpec{name: "idle_timeout", typ: typeDuration,
		doc: "The launcher stops the server (a url server: deletes its session) once unused for this long: no client connected to it, and no call of a gateway agent." + durationDoc},
		func(d *decoder, p []string, v any, s *Server) { s.IdleTimeout = d.duration(p, v) }},
	{keySpec{name: "memory_max", typ: typeSize, kinds: stdioKinds,
		doc: "A memory limit for the server's processes, where cgroups are available: bytes, or \"512M\", \"2G\" (K, M, G, T: powers of 1024)."},
		func(d *decoder, p []string, v any, s *Server) {
			s.MemoryMax, s.MemoryMaxPos = d.memory(p, v), d.pos.value(p)
		}},
	{keySpec{name: "cpu_max", typ: typeNumber, kinds: stdioKinds, min: 0.01, max: 1024,
		doc: "A CPU limit for the server's processes, in CPUs (0.5, 2), where cgroups are available."},
		func(d *decoder, p []string, v any, s *Server) {
			s.CPUMax, s.CPUMaxPos = d.cpus(p, v), d.pos.value(p)
		}},
	{keySpec{name: "sandbox", typ: typeTable, kinds: stdioKinds, keys: &sandboxKeys,
		doc: "What the server's processes may touch: its keys replace those of the top-level [sandbox], key by key (a list as a whole)."},
		func(d *decoder, p []string, v any, s *Server) { s.Sandbox = d.sandbox(p, v) }},

	{keySpec{name: "args", typ: typeArgv, kinds: []Kind{KindCommand},
		doc: "The arguments of command, one element each (never split by a shell); they may use ${VAR}."},
		func(d *decoder, p []string, v any, s *Server) { s.Args = d.argv(p, v, false) }},
	{keySpec{name: "build", typ: typeArgv, kinds: []Kind{KindCommand}, nonEmpty: true,
		doc: "A command, as an argv, that builds the server; run in the manifest's directory by mcpgen build and the launcher."},
		func(d *decoder, p []string, v any, s *Server) {
			if t := d.argv(p, v, true); t != nil {
				s.Build = make([]string, len(t))
				for i, e := range t {
					s.Build[i] = e.String()
				}
			}
		}},
	{keySpec{name: "watch", typ: typeGlobs, kinds: []Kind{KindCommand},
		doc: "Globs, relative to the manifest's directory (** for any directories): the launcher rebuilds and restarts the server when they change."},
		func(d *decoder, p []string, v any, s *Server) { s.Watch = d.globs(p, v) }},

	{keySpec{name: "read_only", typ: typeBool, kinds: []Kind{KindBuiltin}, builtin: "files", def: false,
		doc: "files: no writing tools."},
		func(d *decoder, p []string, v any, s *Server) { s.ReadOnly, _ = d.boolean(p, v) }},
	{keySpec{name: "protect", typ: typeGlobs, kinds: []Kind{KindBuiltin}, builtin: "files", def: DefaultProtect,
		doc: "files: globs, relative to the workspace, that are never written. [] protects nothing."},
		func(d *decoder, p []string, v any, s *Server) {
			s.Protect = d.globs(p, v)
			if s.Protect == nil {
				s.Protect = []string{}
			}
		}},

	{keySpec{name: "headers", typ: typeVars, kinds: []Kind{KindRemote}, names: headerName,
		doc: "HTTP headers sent to the remote server; values may use ${VAR}, which stay references in emitted configs."},
		func(d *decoder, p []string, v any, s *Server) {
			s.Headers = d.vars(p, v, headerName, "HTTP header name")
		}},
	{keySpec{name: "bearer_token_env", typ: typeString, kinds: []Kind{KindRemote}, pattern: varName,
		doc: "The name of the environment variable that holds the remote server's bearer token: the token stays in the environment, never in a file."},
		func(d *decoder, p []string, v any, s *Server) {
			if str, ok := d.str(p, v); ok {
				if !varName.MatchString(str) {
					d.valueError(p, "\"bearer_token_env\" names the variable that holds the token, e.g. \"DOCS_TOKEN\"; %q is not a variable name", str)
				}
				s.BearerTokenEnv = str
			}
		}},
}

// sandboxPathPattern is the form of a sandbox path as written: absolute,
// or starting with ~, {workspace} or a ${VAR}.
var sandboxPathPattern = lazyregexp.New(`^(/|\\\\|[A-Za-z]:[/\\]|~$|~/|\{workspace\}($|/)|\$\{)`)

// sandboxKeys are the keys of [sandbox] and [servers.NAME.sandbox].
var sandboxKeys = keyTable[*SandboxRules]{
	{keySpec{name: "enabled", typ: typeBool, def: false,
		doc: "Run the server confined to what the sandbox grants."},
		func(d *decoder, p []string, v any, r *SandboxRules) {
			if b, ok := d.boolean(p, v); ok {
				r.Enabled = &b
			}
		}},
	{keySpec{name: "read", typ: typeStrings, elemPattern: sandboxPathPattern,
		doc: "Paths the server may read, besides the system paths a process needs and its own program: absolute, or starting with ~ or {workspace} (WORKSPACE_DIR); ${VAR} allowed. Default: [\"{workspace}\"]."},
		func(d *decoder, p []string, v any, r *SandboxRules) { r.Read = d.sandboxPaths(p, v) }},
	{keySpec{name: "write", typ: typeStrings, elemPattern: sandboxPathPattern,
		doc: "Paths the server may write (and read), besides a private temporary directory (TMPDIR); written as read. Default: [\"{workspace}\"]."},
		func(d *decoder, p []string, v any, r *SandboxRules) { r.Write = d.sandboxPaths(p, v) }},
	{keySpec{name: "network", typ: typeNetwork, def: NetworkNone,
		doc: "Where the server may connect: \"none\", \"loopback\" (this machine), \"all\", or a list of \"host:port\" such as [\"api.github.com:443\"]."},
		func(d *decoder, p []string, v any, r *SandboxRules) { r.Network = d.network(p, v) }},
	{keySpec{name: "enforce", typ: typeString, enum: EnforceModes, def: EnforceWarn,
		doc: "When the platform cannot enforce a rule: \"warn\" runs the server and says what is not enforced (status, validate, the log); \"strict\" does not start it."},
		func(d *decoder, p []string, v any, r *SandboxRules) {
			if str, ok := d.str(p, v); ok {
				if !slices.Contains(EnforceModes, str) {
					d.valueError(p, "unknown enforce mode %q%s; use \"warn\" (run, and say what is not enforced) or \"strict\" (refuse to start the server)", str, suggest(str, EnforceModes)).Suggestion = closestOr(str, EnforceModes)
					return
				}
				r.Enforce = str
			}
		}},
}

// toolKeys are the keys of a declared tool, [servers.NAME.tools.TOOL].
var toolKeys = keyTable[*Tool]{
	{keySpec{name: "description", typ: typeString, doc: "What the tool does, for the model."},
		func(d *decoder, p []string, v any, t *Tool) { t.Description, _ = d.str(p, v) }},
	{keySpec{name: "run", typ: typeArgv, nonEmpty: true,
		doc: "The command, as an argv, run without a shell: [\"git\", \"log\", \"-n\", \"{count}\"]. {arg} in an element is replaced by the argument, and must name one; an element whose argument is absent is dropped. An argument substituted into the code of sh -c, python -c and the like is refused unless it has allow_shell = true: pass it as an element of its own."},
		nil}, // tool decodes it once the arguments are known
	{keySpec{name: "args", typ: typeMap, names: varName, keys: &argKeys,
		doc: "The tool's arguments, which become its input schema."},
		func(d *decoder, p []string, v any, t *Tool) { t.Args = d.args(p, v) }},
	{keySpec{name: "timeout", typ: typeDuration,
		doc: "How long one call may take. Default: the server's tool_timeout." + durationDoc},
		func(d *decoder, p []string, v any, t *Tool) { t.Timeout = d.duration(p, v) }},
}

var argTypes = []string{TypeString, TypeInteger, TypeNumber, TypeBoolean}

// argKeys are the keys of a declared tool's argument. arg decodes type
// first, since the other keys' values are checked against it, and
// required last, against the default.
var argKeys = keyTable[*Arg]{
	{keySpec{name: "type", typ: typeString, enum: argTypes, def: TypeString, doc: "The argument's JSON type."},
		func(*decoder, []string, any, *Arg) {}},
	{keySpec{name: "description", typ: typeString, doc: "What the argument means, for the model."},
		func(d *decoder, p []string, v any, a *Arg) { a.Description, _ = d.str(p, v) }},
	{keySpec{name: "default", typ: typeScalar, doc: "The value when the call gives none; of the argument's type."},
		func(d *decoder, p []string, v any, a *Arg) { a.Default, _ = d.argValue(p, a.Type, v) }},
	{keySpec{name: "required", typ: typeBool,
		doc: "Whether a call must give the argument. Default: true unless there is a default."},
		nil}, // arg weighs it against the default
	{keySpec{name: "enum", typ: typeScalars, doc: "The values allowed, of the argument's type."},
		func(d *decoder, p []string, v any, a *Arg) {
			vals, ok := v.([]any)
			if !ok || len(vals) == 0 {
				d.valueError(p, "\"enum\" must be a non-empty array of allowed values")
				return
			}
			for i, e := range vals {
				if x, ok := d.argValue(child(p, indexKey(i)), a.Type, e); ok {
					a.Enum = append(a.Enum, x)
				}
			}
		}},
	{keySpec{name: "allow_dash", typ: typeBool, def: false,
		doc: "A string argument may start with \"-\". Off by default: \"--output=/x\" in an argv element of its own would read as an option."},
		func(d *decoder, p []string, v any, a *Arg) {
			a.AllowDash, _ = d.boolean(p, v)
			if a.Type != TypeString {
				d.keyError(p, "\"allow_dash\" applies to string arguments; %q is %s", a.Name, withArticle(a.Type))
			}
		}},
	{keySpec{name: "allow_shell", typ: typeBool, def: false,
		doc: "A string argument may be substituted into code that an interpreter runs: the script of sh -c, bash -c, cmd /c, powershell -Command, python -c, node -e, perl -e and the like. Off by default: the model would write code; pass the argument as an element of its own instead: [\"sh\", \"-c\", \"grep \\\"$1\\\" .\", \"sh\", \"{pattern}\"]."},
		func(d *decoder, p []string, v any, a *Arg) {
			a.AllowShell, _ = d.boolean(p, v)
			if a.Type != TypeString {
				d.keyError(p, "\"allow_shell\" applies to string arguments; %q is %s", a.Name, withArticle(a.Type))
			}
		}},
}
