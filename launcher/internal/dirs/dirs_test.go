package dirs

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestDirRules checks every platform's default directories, whatever
// system the test runs on: the environment, the home and the uid are
// given.
func TestDirRules(t *testing.T) {
	tests := []struct {
		name        string
		rules       dirRules
		env         map[string]string
		home        string // "" for no home
		wantBase    string
		wantManaged []string
		wantState   string
		wantErr     string // from state, when there is no home
	}{
		{
			name: "linux XDG", rules: linuxDirs,
			env:  map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/st"},
			home: "/home/ann", wantBase: "/run/user/1000", wantManaged: []string{"mcpgen"},
			wantState: "/st/mcpgen/ws",
		},
		{
			name: "linux relative XDG ignored", rules: linuxDirs,
			env:  map[string]string{"XDG_RUNTIME_DIR": "run", "XDG_STATE_HOME": "st"},
			home: "/home/ann", wantBase: "/tmpdir", wantManaged: []string{"mcpgen-1000"},
			wantState: "/home/ann/.local/state/mcpgen/ws",
		},
		{
			name: "linux no home", rules: linuxDirs,
			wantBase: "/tmpdir", wantManaged: []string{"mcpgen-1000"},
			wantErr: "state dir: $HOME is not defined: set",
		},
		{
			name: "darwin defaults", rules: darwinDirs,
			env:  map[string]string{"TMPDIR": "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/"},
			home: "/Users/ann", wantBase: "/tmp", wantManaged: []string{"mcpgen-1000"},
			wantState: "/Users/ann/Library/Logs/mcpgen/ws",
		},
		{
			name: "darwin XDG", rules: darwinDirs,
			env:  map[string]string{"XDG_RUNTIME_DIR": "/xr", "XDG_STATE_HOME": "/xs"},
			home: "/Users/ann", wantBase: "/xr", wantManaged: []string{"mcpgen"},
			wantState: "/xs/mcpgen/ws",
		},
		{
			name: "windows LOCALAPPDATA", rules: windowsDirs,
			env:  map[string]string{"LOCALAPPDATA": `C:\Users\ann\AppData\Local`, "XDG_RUNTIME_DIR": "/xr", "XDG_STATE_HOME": "/xs"},
			home: `C:\Users\ann`, wantBase: `C:\Users\ann\AppData\Local\mcpgen`, wantManaged: []string{"run"},
			wantState: `C:\Users\ann\AppData\Local\mcpgen\logs\ws`,
		},
		{
			name: "windows without LOCALAPPDATA", rules: windowsDirs,
			env:  map[string]string{"LOCALAPPDATA": `relative`},
			home: `C:\Users\ann\`, wantBase: `C:\Users\ann\AppData\Local\mcpgen`, wantManaged: []string{"run"},
			wantState: `C:\Users\ann\AppData\Local\mcpgen\logs\ws`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := dirEnv{
				getenv: func(k string) string { return tt.env[k] },
				home: func() (string, error) {
					if tt.home == "" {
						return "", errors.New("$HOME is not defined")
					}
					return tt.home, nil
				},
				uid:     1000,
				tempDir: "/tmpdir",
			}
			base, managed, err := tt.rules.runtime(e)
			if err != nil || base != tt.wantBase || !slices.Equal(managed, tt.wantManaged) {
				t.Errorf("runtime: got %q %q %v, want %q %q", base, managed, err, tt.wantBase, tt.wantManaged)
			}
			state, err := tt.rules.state(e, "ws")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), EnvStateDir) {
					t.Errorf("state: got %q, %v; want an error with %q that names %s", state, err, tt.wantErr, EnvStateDir)
				}
				return
			}
			if err != nil || state != tt.wantState {
				t.Errorf("state: got %q, %v; want %q", state, err, tt.wantState)
			}
		})
	}
}

// TestDirRulesSocketFits shows how long a workspace id each platform's
// default runtime dir leaves room for, in the control socket's path: the
// longest (manifest.CheckWorkspaceID allows 64 characters) on Linux and
// macOS, where macOS's $TMPDIR would not; on Windows, the profile's path
// leaves about 59 characters for the user's name and the id together, so a
// long id there needs MCPGEN_RUNTIME_DIR (which SocketPath's error says).
func TestDirRulesSocketFits(t *testing.T) {
	tests := []struct {
		name    string
		rules   dirRules
		env     map[string]string
		tempDir string
		id      string
		fits    bool
	}{
		{"linux XDG_RUNTIME_DIR", linuxDirs, map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, "/tmp", strings.Repeat("w", 64), true},
		{"linux /tmp", linuxDirs, nil, "/tmp", strings.Repeat("w", 64), true},
		{"darwin /tmp", darwinDirs, nil, "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T", strings.Repeat("w", 64), true},
		// What darwinDirs avoids: $TMPDIR as the base.
		{"darwin if it were $TMPDIR", dirRules{runtime: linuxDirs.runtime, maxSocketPath: darwinDirs.maxSocketPath},
			nil, "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T", strings.Repeat("w", 64), false},
		{"windows, a uuid", windowsDirs, map[string]string{"LOCALAPPDATA": `C:\Users\ann.smith\AppData\Local`}, "",
			"0b7c3c1e-8f43-4a5e-9d55-1f1c2a3b4c5d", true},
		{"windows, 64 characters", windowsDirs, map[string]string{"LOCALAPPDATA": `C:\Users\ann\AppData\Local`}, "", strings.Repeat("w", 64), false},
	}
	for _, tt := range tests {
		e := dirEnv{
			getenv:  func(k string) string { return tt.env[k] },
			home:    func() (string, error) { return "/home/ann", nil },
			uid:     501,
			tempDir: tt.tempDir,
		}
		base, managed, err := tt.rules.runtime(e)
		managed = append(managed, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		p := path.Join(append([]string{base}, append(managed, ControlSocket+".sock")...)...)
		if strings.Contains(base, `\`) {
			p = joinWindows(append([]string{base}, append(managed, ControlSocket+".sock")...)...)
		}
		if fits := len(p) <= tt.rules.maxSocketPath; fits != tt.fits {
			t.Errorf("%s: %s is %d bytes, limit %d: fits is %v, want %v", tt.name, p, len(p), tt.rules.maxSocketPath, fits, tt.fits)
		}
	}
}

func TestCheckPrivateACL(t *testing.T) {
	const me, other = "S-1-5-21-1-2-3-1001", "S-1-5-21-1-2-3-1002"
	allow := func(sid string) aclEntry { return aclEntry{allow: true, sid: sid} }
	tests := []struct {
		name    string
		owner   string
		dacl    []aclEntry
		hasDACL bool
		want    string // in the error; "" for none
	}{
		{"what mcpgen makes", me, []aclEntry{allow(me)}, true, ""},
		{"inherited from a profile", me, []aclEntry{allow(sidSystem), allow(sidAdministrators), allow(me)}, true, ""},
		{"a deny entry for another", me, []aclEntry{{allow: false, sid: other}, allow(me)}, true, ""},
		{"another user's", other, []aclEntry{allow(me)}, true, "owned by " + other + ", not by you"},
		{"no list", me, nil, false, "no access control list, which lets everyone in"},
		{"everyone", me, []aclEntry{allow(me), allow("S-1-1-0")}, true, "lets S-1-1-0 in, not only you"},
		{"authenticated users and another", me, []aclEntry{allow("S-1-5-11"), allow(other)}, true, "lets S-1-5-11, " + other + " in"},
		{"an entry it cannot read", me, []aclEntry{allow(me), {}}, true, "an entry mcpgen cannot read"},
	}
	for _, tt := range tests {
		err := checkPrivateACL(`C:\run\ws`, tt.owner, me, tt.dacl, tt.hasDACL)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: got %v, want no error", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if got, want := privateSDDL(me), "O:"+me+"D:P(A;OICI;FA;;;"+me+")"; got != want {
		t.Errorf("privateSDDL: got %q, want %q", got, want)
	}
}
