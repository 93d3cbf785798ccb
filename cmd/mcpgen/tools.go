package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	json "github.com/goccy/go-json"
	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/launcher"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/mcp/streamable"
)

// toolsTarget says where tools ls and tools call find their server, and
// how to reach it: a remote server, directly (--url), or the gateway of a
// workspace's session (every server of the workspace).
type toolsTarget struct {
	url       string
	protocol  string
	headers   []string
	bearerEnv string
	timeout   time.Duration
	verbose   bool
	workspace string
	servers   []string
	// gatewayTools is how the gateway session lists its tools ("search"
	// for tools search); "": as the workspace says.
	gatewayTools string
	cmd          *cobra.Command
}

func (o *toolsTarget) flags(cmd *cobra.Command) {
	o.cmd = cmd
	f := cmd.Flags()
	workspaceFlag(cmd, &o.workspace)
	f.StringSliceVar(&o.servers, "servers", nil, "the gateway's servers to use (comma-separated; default all)")
	f.StringVar(&o.url, "url", "", "a remote MCP server's endpoint (Streamable HTTP), reached directly")
	f.StringVar(&o.protocol, "protocol", "auto", "the protocol revision to speak to --url: auto (ask the server), "+strings.Join(mcp.AllVersions(), ", "))
	f.StringArrayVar(&o.headers, "header", nil, "an HTTP header for --url, `NAME=VALUE` (repeatable)")
	f.StringVar(&o.bearerEnv, "bearer-token-env", "", "the environment `VAR` that holds a bearer token for --url")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for each answer")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log the HTTP exchanges' troubles to stderr")
}

func (a *app) toolsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List or call the tools of the workspace, or of an MCP server",
		Long: `Tools lists the tools of the workspace's gateway (every server of a
running session, named as agents see them), or of a remote MCP server, or
calls one and prints the result: the quickest way to check a server
without an agent.

Without --url, the tools are the gateway's, in the session of --workspace
(or $MCPGEN_WORKSPACE, or the only session running): ls shows each tool's
server, and call reaches it through the gateway, as an agent would.

With --url, the server is a remote one (Streamable HTTP), reached directly.
mcpgen finds the revision it speaks: a modern server (2026-07-28) is asked
statelessly, each request naming the revision, with no session; a legacy
one gets the initialize handshake and a session, ended when mcpgen is done.
--protocol pins the revision instead (auto is the default). Headers come
from --header, a bearer token from the variable that --bearer-token-env
names (never from the command line, never printed).

When the server asks something of mcpgen during a call (a legacy server's
requests, a modern server's input_required result), mcpgen answers ping,
roots/list (the current directory), and elicitation by accepting the
defaults of the requested form (and cancelling when a required field has
none), and says so on stderr; it refuses sampling, having no model. A
modern server's call is then made again with the answers.`,
		Example: `  mcpgen tools ls --workspace ws-42
  mcpgen tools call --workspace ws-42 git__log count=3
  mcpgen tools ls --url http://127.0.0.1:3001/mcp
  mcpgen tools ls --url http://127.0.0.1:3001/mcp --protocol 2025-11-25
  mcpgen tools call --url http://127.0.0.1:3001/mcp echo message=hi`,
	}
	cmd.AddCommand(a.toolsLsCommand(), a.toolsCallCommand(), a.toolsSearchCommand())
	return cmd
}

func (a *app) toolsSearchCommand() *cobra.Command {
	o := toolsTarget{gatewayTools: "search"}
	var server string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search [--workspace ID] QUERY...",
		Short: "Find the workspace's tools for a task, as the gateway's search_tools ranks them",
		Long: `Search ranks the tools of the workspace's gateway for a task, as an agent's
search_tools does in search mode ([gateway] tools = "search", or connect
--tools search): best first, with each tool's server and description, or
with --json as search_tools answers (each tool's name, server, description
and input schema). The words of QUERY are the task, as a user says it.
The ranking is offline and the same every time: tools whose name is the
query or starts with it first, then by BM25 over the tools' words and
their synonyms.`,
		Example: `  mcpgen tools search --workspace ws-42 open a pull request
  mcpgen tools search --workspace ws-42 --server git what changed
  mcpgen tools search --workspace ws-42 --limit 3 --json remember that Alice prefers tea`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("say what the tool should do: mcpgen tools search [--workspace ID] QUERY...")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			arguments := map[string]json.RawMessage{}
			query, _ := json.Marshal(strings.Join(args, " "))
			arguments["query"] = query
			if server != "" {
				arguments["server"], _ = json.Marshal(server)
			}
			if cmd.Flags().Changed("limit") {
				arguments["limit"], _ = json.Marshal(limit)
			}
			c, err := a.dialGateway(ctx, &o)
			if err != nil {
				return err
			}
			defer c.Close()
			raw, err := a.callTool(ctx, c, "search_tools", arguments)
			if err != nil {
				return fmt.Errorf("search_tools: %w", err)
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("search_tools: the result is not what MCP says: %v", err)
			}
			text := ""
			if len(res.Content) > 0 {
				text = res.Content[0].Text
			}
			if res.IsError {
				return errors.New(printable(text, 1000))
			}
			if asJSON {
				return writeIndented(a.stdout, []byte(text))
			}
			return writeFound(a.stdout, a.stderr, text)
		},
	}
	f := cmd.Flags()
	workspaceFlag(cmd, &o.workspace)
	f.StringSliceVar(&o.servers, "servers", nil, "the gateway's servers to search (comma-separated; default all)")
	f.StringVar(&server, "server", "", "only this server's tools")
	f.IntVar(&limit, "limit", 8, "how many tools at most (1 to 50)")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for each answer")
	f.BoolVar(&asJSON, "json", false, "print the tools as search_tools gives them (JSON)")
	return cmd
}

// writeFound prints the tools search_tools found (its JSON, text): name,
// server and the first line of the description; or its hint when it
// found none.
func writeFound(w, errw io.Writer, text string) error {
	var r struct {
		Tools []struct {
			Name        string `json:"name"`
			Server      string `json:"server"`
			Description string `json:"description"`
		} `json:"tools"`
		Hint string `json:"hint"`
	}
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return fmt.Errorf("search_tools: the answer is not its JSON: %v", err)
	}
	if len(r.Tools) == 0 {
		// The hint names the servers, as their manifest or they describe
		// themselves: escaped, as every text a server wrote.
		for i, line := range strings.Split(strings.TrimSpace(r.Hint), "\n") {
			if i == 0 {
				line = "mcpgen: " + line
			}
			fmt.Fprintln(errw, printable(line, 200))
		}
		return silentFailure
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSERVER\tDESCRIPTION")
	for _, t := range r.Tools {
		desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", printable(t.Name, 64), printable(t.Server, 64), printable(desc, 100))
	}
	return tw.Flush()
}

func (a *app) toolsLsCommand() *cobra.Command {
	var o toolsTarget
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [--workspace ID | --url URL]",
		Short: "List the tools of the workspace, or of an MCP server",
		Long: `Ls lists the tools of the workspace's gateway, or of an MCP server: a table
of name, title and description (and, for the gateway, each tool's server),
or with --json the tools as they are listed (a JSON array; the gateway
names each tool's server and its own name for it in _meta).`,
		Example: `  mcpgen tools ls --workspace ws-42
  mcpgen tools ls --url http://127.0.0.1:3001/mcp
  DOCS_TOKEN=... mcpgen tools ls --url https://mcp.example.com/mcp --bearer-token-env DOCS_TOKEN --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			c, err := a.toolsServer(ctx, &o)
			if err != nil {
				return err
			}
			defer c.Close()
			tools, err := c.ListTools(ctx)
			if err != nil {
				return err // it names the method
			}
			if asJSON {
				return writeToolsJSON(a.stdout, tools)
			}
			if len(tools) == 0 {
				fmt.Fprintln(a.stderr, "mcpgen: the server has no tools")
				return nil
			}
			return writeToolsTable(a.stdout, tools, o.url == "")
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tools as JSON")
	return cmd
}

func (a *app) toolsCallCommand() *cobra.Command {
	var o toolsTarget
	var argsJSON string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "call [--workspace ID | --url URL] NAME [KEY=VALUE...]",
		Short: "Call a tool of the workspace, or of an MCP server, and print the result",
		Long: `Call calls one tool and prints its result: text as text (its control
characters escaped, tabs and newlines apart, so that a server cannot drive
the terminal), other content (images, audio, resources) as a one-line
summary, or with --json the whole result as the server sent it.

Arguments are KEY=VALUE pairs, typed by the tool's input schema (integer,
number, boolean, string; arrays and objects as JSON), on top of --args, a
JSON object. A key the schema does not type takes a string, or JSON when the
value is a JSON array or object.

A result that is an error (isError) goes to stderr, and the exit status is 1.`,
		Example: `  mcpgen tools call --workspace ws-42 git__log count=3
  mcpgen tools call --url http://127.0.0.1:3001/mcp echo message=hi
  mcpgen tools call --url http://127.0.0.1:3001/mcp add a=2 b=3
  mcpgen tools call --url http://127.0.0.1:3001/mcp search --args '{"query":"x","tags":["a"]}'`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("name the tool to call: mcpgen tools call [--workspace ID | --url URL] NAME [KEY=VALUE...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			name, pairs := args[0], args[1:]
			base, err := parseArgsJSON(argsJSON)
			if err != nil {
				return usageError("%v", err)
			}
			c, err := a.toolsServer(ctx, &o)
			if err != nil {
				return err
			}
			defer c.Close()
			var schema json.RawMessage
			if len(pairs) > 0 {
				// Typing the values takes the tool's schema.
				tools, err := c.ListTools(ctx)
				if err != nil {
					return err // it names the method
				}
				tool, err := findTool(tools, name)
				if err != nil {
					return err
				}
				schema = tool.InputSchema
			}
			arguments, err := toolArguments(schema, base, pairs)
			if err != nil {
				return usageError("%v", err)
			}
			raw, err := a.callTool(ctx, c, name, arguments)
			if err != nil {
				return fmt.Errorf("tool %s: %w", name, err)
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("tool %s: tools/call: the result is not what MCP says: %v", name, err)
			}
			out := a.stdout
			if res.IsError {
				out = a.stderr
			}
			if asJSON {
				err = writeIndented(out, raw)
			} else {
				err = writeResult(out, &res)
			}
			if err != nil {
				return err
			}
			if res.IsError {
				return silentFailure
			}
			return nil
		},
	}
	o.flags(cmd)
	cmd.Flags().StringVar(&argsJSON, "args", "", "the arguments as a JSON object; KEY=VALUE pairs go on top")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole result as JSON")
	return cmd
}

// toolsServer opens a session with the server that tools ls and tools
// call work on, initialized and ready: the remote server of --url, else
// the workspace's gateway. The caller closes it.
func (a *app) toolsServer(ctx context.Context, o *toolsTarget) (*mcp.Client, error) {
	if o.url != "" {
		if o.cmd != nil && (o.cmd.Flags().Changed("workspace") || o.cmd.Flags().Changed("servers")) {
			return nil, usageError("--url reaches a server directly: drop --workspace and --servers")
		}
		return a.dialURL(ctx, o)
	}
	if len(o.headers) > 0 || o.bearerEnv != "" || (o.cmd != nil && o.cmd.Flags().Changed("protocol")) {
		return nil, usageError("--header, --bearer-token-env and --protocol go with --url")
	}
	return a.dialGateway(ctx, o)
}

// dialGateway opens a session with the workspace's gateway, through its
// launcher's control socket.
func (a *app) dialGateway(ctx context.Context, o *toolsTarget) (*mcp.Client, error) {
	workspace, err := sessionWorkspace(o.workspace, "or --url URL for a remote server")
	if err != nil {
		return nil, err
	}
	conn, _, err := ctl.ConnectGateway(ctx, workspace, o.servers, o.gatewayTools, nil, nil)
	if err != nil {
		return nil, err
	}
	return a.toolsClient(ctx, conn, conn, o, "mcpgen tools", a.toolsLogger(o), nil)
}

// toolsLogger logs the client's traffic with --verbose, else nothing.
func (a *app) toolsLogger(o *toolsTarget) *slog.Logger {
	if o.verbose {
		return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// toolsClient opens an MCP session over r and w as client name: with
// the initialize handshake, or as open says (the server's era found, or
// pinned).
func (a *app) toolsClient(ctx context.Context, r io.Reader, w io.Writer, o *toolsTarget, name string, logger *slog.Logger, open *mcp.OpenOptions) (*mcp.Client, error) {
	c := mcp.NewClient(ctx, r, w, mcp.ClientOptions{
		Info:         mcp.Implementation{Name: name, Version: versionString()},
		Capabilities: toolsCapabilities,
		Handler:      mcp.HandlerFunc(a.answerServer),
		Timeout:      o.timeout,
		Logger:       logger,
	})
	var err error
	if open != nil {
		_, err = c.Open(ctx, *open)
	} else {
		_, err = c.Initialize(ctx)
	}
	if err != nil {
		c.Close()
		return nil, err // it names the method
	}
	return c, nil
}

// dialURL opens a session with a remote server over Streamable HTTP.
func (a *app) dialURL(ctx context.Context, o *toolsTarget) (*mcp.Client, error) {
	header := http.Header{}
	for _, h := range o.headers {
		name, value, err := parseHeader(h)
		if err != nil {
			return nil, usageError("--header %q: %v", h, err)
		}
		header.Add(name, value)
	}
	var token string
	if o.bearerEnv != "" {
		token = os.Getenv(o.bearerEnv)
		if token == "" {
			return nil, usageError("--bearer-token-env %s: the variable is not set or empty: export it first", o.bearerEnv)
		}
	}
	// auto: the spec's way over HTTP, a modern request first (no grace:
	// every request gets an answer), then initialize unless the answer
	// was modern.
	open := &mcp.OpenOptions{Grace: -1}
	if o.protocol != "auto" {
		if mcp.VersionEra(o.protocol) == mcp.EraUnknown {
			return nil, usageError("--protocol %q: want auto or one of %s", o.protocol, strings.Join(mcp.AllVersions(), ", "))
		}
		open = &mcp.OpenOptions{Version: o.protocol}
	}
	logger := a.toolsLogger(o)
	t, err := streamable.New(o.url, streamable.Options{Header: header, BearerToken: token, Logger: logger, Protocol: o.protocol})
	if err != nil {
		return nil, usageError("--url: %v", err)
	}
	c, err := a.toolsClient(ctx, t, t, o, "mcpgen", logger, open)
	if werr := (*mcp.Error)(nil); errors.As(err, &werr) && o.protocol != "auto" {
		if versions, ok := werr.SupportedVersions(); ok {
			return nil, fmt.Errorf("%w; the server speaks %s: pin one of them with --protocol, or drop --protocol", err, printable(strings.Join(versions, ", "), 200))
		}
	}
	return c, err
}

// parseHeader reads NAME=VALUE, or NAME: VALUE as curl takes it.
func parseHeader(h string) (name, value string, err error) {
	colon, equals := strings.IndexByte(h, ':'), strings.IndexByte(h, '=')
	switch {
	case colon >= 0 && (equals < 0 || colon < equals):
		name, value = h[:colon], h[colon+1:]
	case equals >= 0:
		name, value = h[:equals], h[equals+1:]
	default:
		return "", "", errors.New("want NAME=VALUE")
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if name == "" {
		return "", "", errors.New("no header name; want NAME=VALUE")
	}
	return name, value, nil
}

// toolsCapabilities are what tools ls and tools call can answer: form
// elicitation (with the defaults) and roots (the current directory).
var toolsCapabilities = json.RawMessage(`{"elicitation":{"form":{}},"roots":{"listChanged":false}}`)

// answerServer answers the server's requests during a session of tools ls
// or tools call (ping is answered by mcp.Client). Nobody is at the keyboard:
// elicitation takes the form's defaults.
func (a *app) answerServer(_ context.Context, req *mcp.Request) (any, error) {
	switch req.Method {
	case "elicitation/create":
		res, note := elicitDefaults(req.Params)
		fmt.Fprintf(a.stderr, "mcpgen: the server asked for input: %s\n", note)
		return res, nil
	case "roots/list":
		wd, err := os.Getwd()
		if err != nil {
			return nil, mcp.NewError(mcp.CodeInternalError, "roots/list: %v", err)
		}
		return map[string]any{"roots": []map[string]string{{"uri": fileURI(wd), "name": filepath.Base(wd)}}}, nil
	case "sampling/createMessage":
		return nil, mcp.NewError(mcp.CodeMethodNotFound, "sampling/createMessage: mcpgen tools has no model to sample from, and did not declare sampling")
	}
	return nil, mcp.NewError(mcp.CodeMethodNotFound, "method not found: %s", req.Method)
}

// maxInputRounds bounds the rounds of a call that a modern server answers
// with input_required: a server that asks for ever is not followed.
const maxInputRounds = 10

// callTool calls a tool and returns its result as the server sent it. A
// modern server that needs input answers input_required instead: mcpgen
// answers each of its inputRequests as it answers a legacy server's
// requests (answerServer), and calls again, under a new id, with the
// answers and the server's requestState as it was sent (none when none
// was), until the result is complete.
func (a *app) callTool(ctx context.Context, c *mcp.Client, name string, arguments map[string]json.RawMessage) (json.RawMessage, error) {
	params, err := json.Marshal(map[string]any{"name": name, "arguments": arguments})
	if err != nil {
		return nil, err
	}
	for round := 1; ; round++ {
		var raw json.RawMessage
		if err := c.Call(ctx, "tools/call", json.RawMessage(params), &raw); err != nil {
			return nil, err
		}
		if mcp.ResultType(raw) != mcp.ResultInputRequired {
			return raw, nil
		}
		if round > maxInputRounds {
			return nil, fmt.Errorf("tools/call: the server still asks for input after %d rounds; giving up", maxInputRounds)
		}
		ir, err := mcp.ParseInputRequired(raw)
		if err != nil {
			return nil, fmt.Errorf("tools/call: the server's input_required result is not what MCP says: %v", err)
		}
		retry := []mcp.ObjectMember{{Key: "inputResponses"}, {Key: "requestState"}} // nil values: none
		if len(ir.Keys) > 0 {
			responses := []byte{'{'}
			for i, key := range ir.Keys {
				answer, err := a.answerInput(ctx, ir.InputRequests[key])
				if err != nil {
					return nil, fmt.Errorf("tools/call: input %q: %w", printable(key, 64), err)
				}
				if i > 0 {
					responses = append(responses, ',')
				}
				k, _ := json.Marshal(key)
				responses = append(append(append(responses, k...), ':'), answer...)
			}
			retry[0].Value = append(responses, '}')
		}
		if ir.HasState {
			retry[1].Value, _ = json.Marshal(ir.RequestState)
		}
		if params, err = mcp.SetMembers(params, retry...); err != nil {
			return nil, err
		}
	}
}

// answerInput answers one of a modern server's inputRequests, as the
// request it stands for would be answered.
func (a *app) answerInput(ctx context.Context, in mcp.InputRequest) (json.RawMessage, error) {
	res, err := a.answerServer(ctx, &mcp.Request{Method: in.Method, Params: in.Params})
	if werr := (*mcp.Error)(nil); errors.As(err, &werr) {
		err = errors.New(werr.Message) // not the code: nothing went over the wire
	}
	if err != nil {
		return nil, fmt.Errorf("the server asks for %s, which mcpgen tools cannot answer (%v)", printable(in.Method, 64), err)
	}
	return json.Marshal(res)
}

// fileURI returns the file: URI of an absolute path.
func fileURI(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/x on Windows
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// elicitDefaults answers an elicitation/create as a user who accepts the
// form as it comes: every field that has a default gets it. A required
// field without one cannot be answered: the request is cancelled. It also
// returns a line that tells the user what was asked and answered.
func elicitDefaults(params json.RawMessage) (result map[string]any, note string) {
	var p struct {
		Mode            string `json:"mode"`
		Message         string `json:"message"`
		RequestedSchema struct {
			Properties map[string]struct {
				Default json.RawMessage `json:"default"`
			} `json:"properties"`
			Required []string `json:"required"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return map[string]any{"action": "cancel"}, fmt.Sprintf("an elicitation mcpgen cannot read (%v): cancelled", err)
	}
	asked := termtext.Cut(p.Message, 200) // %q escapes it
	if p.Mode != "" && p.Mode != "form" {
		return map[string]any{"action": "decline"}, fmt.Sprintf("%q (%s mode, which needs a person): declined", asked, printable(p.Mode, 20))
	}
	content := make(map[string]json.RawMessage)
	for name, prop := range p.RequestedSchema.Properties {
		if len(prop.Default) > 0 && string(prop.Default) != "null" {
			content[name] = prop.Default
		}
	}
	for _, name := range p.RequestedSchema.Required {
		if _, ok := content[name]; !ok {
			return map[string]any{"action": "cancel"}, fmt.Sprintf("%q: cancelled, since the required field %q has no default", asked, termtext.Cut(name, 64))
		}
	}
	shown, _ := json.Marshal(content)
	return map[string]any{"action": "accept", "content": content}, fmt.Sprintf("%q: accepted the defaults %s", asked, printable(string(shown), 200))
}

// parseArgsJSON reads --args: a JSON object, or nothing.
func parseArgsJSON(s string) (map[string]json.RawMessage, error) {
	args := make(map[string]json.RawMessage)
	if strings.TrimSpace(s) == "" {
		return args, nil
	}
	if t := strings.TrimSpace(s); t[0] != '{' {
		return nil, errors.New(`--args: want a JSON object, such as '{"message":"hi"}'`)
	}
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return nil, fmt.Errorf("--args: not a JSON object: %v", err)
	}
	return args, nil
}

// findTool returns the tool named name, or an error that lists the others.
func findTool(tools []*mcp.Tool, name string) (*mcp.Tool, error) {
	var names []string
	for _, t := range tools {
		if t.Name == name {
			return t, nil
		}
		names = append(names, printable(t.Name, 64))
	}
	slices.Sort(names)
	list := strings.Join(names, ", ")
	if len(names) > 20 {
		list = strings.Join(names[:20], ", ") + fmt.Sprintf(" and %d more", len(names)-20)
	}
	if list == "" {
		list = "none"
	}
	return nil, fmt.Errorf("the server has no tool %q (its tools: %s); mcpgen tools ls lists them", name, list)
}

// toolArguments builds the arguments object: base (from --args), then each
// KEY=VALUE pair, its value typed by the property's type in schema.
func toolArguments(schema json.RawMessage, base map[string]json.RawMessage, pairs []string) (map[string]json.RawMessage, error) {
	types := propertyTypes(schema)
	args := base
	if args == nil {
		args = make(map[string]json.RawMessage)
	}
	for _, pair := range pairs {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("argument %q: want KEY=VALUE", pair)
		}
		raw, err := typedValue(types[key], value)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %v", key, err)
		}
		args[key] = raw
	}
	return args, nil
}

// propertyTypes reads the JSON type of each property of an input schema:
// its "type", or the first one of a list that is not "null".
func propertyTypes(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	types := make(map[string]string)
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return types
	}
	for name, p := range s.Properties {
		var one string
		var many []string
		switch {
		case json.Unmarshal(p.Type, &one) == nil:
			types[name] = one
		case json.Unmarshal(p.Type, &many) == nil:
			for _, t := range many {
				if t != "null" {
					types[name] = t
					break
				}
			}
		}
	}
	return types
}

// typedValue turns a command-line value into JSON of the given type.
func typedValue(typ, v string) (json.RawMessage, error) {
	switch typ {
	case "string":
		return json.Marshal(v)
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer, which the tool's schema wants", v)
		}
		return strconv.AppendInt(nil, n, 10), nil
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%q is not a number, which the tool's schema wants", v)
		}
		if json.Valid([]byte(v)) {
			return json.RawMessage(v), nil // as written: 95.5, 1e3
		}
		return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false, which the tool's schema wants", v)
		}
		return strconv.AppendBool(nil, b), nil
	case "array", "object":
		example := map[string]string{"array": `'["a","b"]'`, "object": `'{"k":"v"}'`}[typ]
		if t := strings.TrimSpace(v); t == "" || t[0] != example[1] || !json.Valid([]byte(t)) {
			return nil, fmt.Errorf("%q is not a JSON %s, which the tool's schema wants (such as %s, quoted for the shell)", v, typ, example)
		}
		return json.RawMessage(strings.TrimSpace(v)), nil
	case "null":
		if v != "null" && v != "" {
			return nil, fmt.Errorf("%q: the tool's schema wants null", v)
		}
		return json.RawMessage("null"), nil
	}
	// Untyped: a string, unless it is plainly a JSON array or object.
	if t := strings.TrimSpace(v); t != "" && (t[0] == '[' || t[0] == '{') && json.Valid([]byte(t)) {
		return json.RawMessage(t), nil
	}
	return json.Marshal(v)
}

// writeToolsTable prints name, title and the first line of the description
// of each tool, and with servers the server that has it (the gateway names
// it in the tool's _meta). What the server wrote is escaped (printable): a
// server must not reach the terminal's escape sequences.
func writeToolsTable(w io.Writer, tools []*mcp.Tool, servers bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if servers {
		fmt.Fprintln(tw, "NAME\tSERVER\tTITLE\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "NAME\tTITLE\tDESCRIPTION")
	}
	for _, t := range tools {
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title
		}
		desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
		if servers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable(t.Name, 64), printable(toolServer(t), 64), printable(title, 40), printable(desc, 80))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", printable(t.Name, 64), printable(title, 40), printable(desc, 80))
	}
	return tw.Flush()
}

// toolServer returns the server that the gateway says has a tool.
func toolServer(t *mcp.Tool) string {
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var server string
	if json.Unmarshal(t.Raw, &r) == nil {
		_ = json.Unmarshal(r.Meta[launcher.GatewayMetaServer], &server)
	}
	return server
}

// writeToolsJSON prints the tools as the server listed them.
func writeToolsJSON(w io.Writer, tools []*mcp.Tool) error {
	raws := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		raws = append(raws, t.Raw)
	}
	b, err := json.Marshal(raws)
	if err != nil {
		return err
	}
	return writeIndented(w, b)
}

func writeIndented(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// writeResult prints a tool's result: text blocks as they are (their
// control characters escaped, tabs and newlines apart), each ending in a
// newline, and a one-line summary of each other block. A result with no
// content shows its structured content, if any.
func writeResult(w io.Writer, res *mcp.CallToolResult) error {
	var b strings.Builder
	for _, c := range res.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
			if !strings.HasSuffix(c.Text, "\n") {
				b.WriteByte('\n')
			}
			continue
		}
		b.WriteString(summarize(c))
		b.WriteByte('\n')
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		raw, _ := res.StructuredContent.(json.RawMessage)
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") == nil {
			b.Write(buf.Bytes())
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, termtext.Text(b.String()))
	return err
}

// summarize says in one line what a content block that is not text holds.
func summarize(c mcp.Content) string {
	var r struct {
		URI      string `json:"uri"`
		Name     string `json:"name"`
		MimeType string `json:"mimeType"`
		Resource struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     string  `json:"blob"`
		} `json:"resource"`
	}
	_ = json.Unmarshal(c.Raw, &r)
	switch c.Type {
	case "image", "audio":
		return fmt.Sprintf("[%s: %s, %d bytes]", c.Type, printable(c.MimeType, 40), len(c.Data))
	case "resource_link":
		s := "[resource link: " + printable(r.URI, 200)
		if r.Name != "" {
			s += " (" + printable(r.Name, 60) + ")"
		}
		if r.MimeType != "" {
			s += ", " + printable(r.MimeType, 40)
		}
		return s + "]"
	case "resource":
		s := "[resource: " + printable(r.Resource.URI, 200)
		if r.Resource.MimeType != "" {
			s += ", " + printable(r.Resource.MimeType, 40)
		}
		if r.Resource.Text != nil {
			s += fmt.Sprintf(", %d characters of text", utf8.RuneCountInString(*r.Resource.Text))
		} else {
			blob, _ := base64.StdEncoding.DecodeString(r.Resource.Blob)
			s += fmt.Sprintf(", %d bytes", len(blob))
		}
		return s + "]"
	}
	return fmt.Sprintf("[%s content, %d bytes of JSON]", printable(c.Type, 40), len(c.Raw))
}

// printable returns s cut to max characters, on one line, its control
// characters escaped: a server's text must not drive the terminal.
func printable(s string, max int) string { return termtext.Line(termtext.Cut(s, max)) }
