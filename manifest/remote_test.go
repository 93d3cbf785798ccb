package manifest

import (
	"reflect"
	"strings"
	"testing"
)

func TestRemote(t *testing.T) {
	m, err := Load("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    *Remote
		wantErr string
	}{
		{name: "token and context header",
			env:  map[string]string{"DOCS_TOKEN": "tok-1"},
			want: &Remote{URL: "https://mcp.example.com/mcp", Headers: []EnvVar{{"X-Tenant", "acme"}}, BearerToken: "tok-1"}},
		{name: "token unset",
			env:     map[string]string{},
			wantErr: `testdata/full.toml:47:20: server "docs": bearer_token_env: DOCS_TOKEN is not set or empty: export it where the launcher starts`},
		{name: "token empty",
			env:     map[string]string{"DOCS_TOKEN": ""},
			wantErr: "DOCS_TOKEN is not set or empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			c, err := m.Context(ContextOptions{WorkspaceID: "ws-1", User: "u", Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Remote(m.Server("docs"), c, getenv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "tok-1") {
					t.Errorf("the error holds the token: %v", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := m.Remote(m.Server("memory"), &Context{}, nil); err == nil {
		t.Error("a command server resolved as remote")
	}
}
