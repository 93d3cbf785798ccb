package manifest

import (
	"strings"
	"testing"
)

// TestContextTemplateAgreesWithContext: what emit writes (the context as
// templates) resolves, in the environment where the server starts, to what
// serve and launch compute there (the context as values). Each case is a
// manifest's [workspace] and the flags.
func TestContextTemplateAgreesWithContext(t *testing.T) {
	env := map[string]string{"USER": "alice", "HOME": "/home/alice", "TOKEN": "t0k", "EMPTY": "", "KEY": "k3y"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name      string
		workspace string
		opts      ContextOptions
	}{
		{"nothing", "", ContextOptions{WorkspaceID: "ws-1"}},
		{"flags", "", ContextOptions{WorkspaceID: "ws-1", Dir: "rel/dir", User: "bob"}},
		{"literal dir", `dir = "/srv/${WORKSPACE_ID}"`, ContextOptions{WorkspaceID: "ws-1"}},
		{"relative dir", `dir = "ws/${WORKSPACE_ID}"`, ContextOptions{WorkspaceID: "ws-1"}},
		{"dir from env", `dir = "${HOME}/ws/${WORKSPACE_ID}"`, ContextOptions{WorkspaceID: "ws-1"}},
		{"relative dir with env", `dir = "ws/${TOKEN}"`, ContextOptions{WorkspaceID: "ws-1"}},
		{"user from env", `user = "${TOKEN}"`, ContextOptions{WorkspaceID: "ws-1"}},
		{"user with a default", `user = "${NOPE:-guest}"`, ContextOptions{WorkspaceID: "ws-1"}},
		{"user empty, default", `user = "${EMPTY:-guest}"`, ContextOptions{WorkspaceID: "ws-1"}},
		{"vars", "[workspace.vars]\nA = \"${KEY}\"\nB = \"${A}-${USER_ID}-${WORKSPACE_DIR}\"\nC = \"${USER_ID:-x}\"", ContextOptions{WorkspaceID: "ws-1"}},
		{"var before its definition, with a default", "[workspace.vars]\nA = \"${B:-early}\"\nB = \"b\"", ContextOptions{WorkspaceID: "ws-1"}},
		{"portable vars", "[workspace.vars]\nA = \"${KEY}\"\nB = \"${A}/${WORKSPACE_ID}\"", ContextOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := tt.workspace
			if ws != "" && !strings.HasPrefix(ws, "[") {
				ws = "[workspace]\n" + ws
			}
			m, err := Parse([]byte("version = 1\n"+ws+"\n"), "m.toml", "/manifest")
			if err != nil {
				t.Fatal(err)
			}
			tt.opts.Cwd = "/cwd"
			ct, err := m.ContextTemplate(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			// Where the server starts: for portable output, the agent
			// provides the three variables of mcpgen.
			agent := ContextOptions{WorkspaceID: "ws-9", Dir: "/agent/dir", User: "agent", Cwd: "/cwd", Getenv: getenv}
			if ct.Literal() {
				agent = tt.opts
				agent.Getenv = getenv
			}
			c, err := m.Context(agent)
			if err != nil {
				t.Fatal(err)
			}
			lookup := func(name string) (string, bool) {
				if !ct.Literal() && IsAgentContext(name) {
					return c.Lookup(name)
				}
				return getenv(name)
			}
			for _, v := range c.All() {
				tmpl, ok := ct.Lookup(v.Name)
				if !ok {
					if ct.Literal() || !IsAgentContext(v.Name) {
						t.Errorf("%s: no template", v.Name)
					}
					continue
				}
				got, err := tmpl.Expand(lookup)
				if err != nil || got != v.Value {
					t.Errorf("%s: the template %q expands to %q (%v), want %q", v.Name, tmpl, got, err, v.Value)
				}
			}
		})
	}
}

// TestContextTemplateKeepsEnvironmentOut: only the flags and the
// manifest's text are literal; what comes from the environment stays a
// reference to its variable.
func TestContextTemplateKeepsEnvironmentOut(t *testing.T) {
	m, err := Parse([]byte("[workspace]\ndir = \"${HOME}/ws\"\nuser = \"${GITHUB_TOKEN}\"\n[workspace.vars]\nKEY = \"${OPENAI_API_KEY}\"\nT = \"acme\"\n"), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	ct, err := m.ContextTemplate(ContextOptions{WorkspaceID: "ws-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := "WORKSPACE_ID=ws-1 WORKSPACE_DIR=${HOME}/ws USER_ID=${GITHUB_TOKEN} KEY=${OPENAI_API_KEY} T=acme"
	var got []string
	for _, v := range ct.Vars {
		got = append(got, v.Name+"="+v.Value.String())
	}
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	var fromEnv []string
	for _, v := range ct.FromEnv() {
		fromEnv = append(fromEnv, v.Name)
	}
	if strings.Join(fromEnv, " ") != "WORKSPACE_DIR USER_ID KEY" {
		t.Errorf("FromEnv: got %v", fromEnv)
	}
	// The default USER_ID comes from $USER.
	m, _ = Parse([]byte("version = 1\n"), "m.toml", "/m")
	ct, _ = m.ContextTemplate(ContextOptions{WorkspaceID: "ws-1", Cwd: "/cwd"})
	if u, _ := ct.Lookup(VarUserID); u.String() != "${USER}" {
		t.Errorf("default USER_ID: got %q, want ${USER}", u)
	}
	ct, _ = m.ContextTemplate(ContextOptions{WorkspaceID: "ws-1", User: "bob", Cwd: "/cwd"})
	if u, _ := ct.Lookup(VarUserID); u.String() != "bob" || len(ct.FromEnv()) != 0 {
		t.Errorf("--user: got %q, %v", u, ct.FromEnv())
	}
}
