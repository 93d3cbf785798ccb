package claude

import (
	"path/filepath"
	"testing"
)

// TestDesktopConfig checks every system's rule for Claude Desktop's config,
// whatever system the test runs on.
func TestDesktopConfig(t *testing.T) {
	tests := []struct {
		goos string
		home string
		env  map[string]string
		want string
	}{
		{"darwin", "/Users/ann", map[string]string{"XDG_CONFIG_HOME": "/x"},
			filepath.Join("/Users/ann", "Library", "Application Support", "Claude", "claude_desktop_config.json")},
		{"windows", `C:\Users\ann`, map[string]string{"APPDATA": `D:\Roaming`},
			filepath.Join(`D:\Roaming`, "Claude", "claude_desktop_config.json")},
		{"windows", `C:\Users\ann`, nil,
			filepath.Join(`C:\Users\ann`, "AppData", "Roaming", "Claude", "claude_desktop_config.json")},
		{"linux", "/home/ann", map[string]string{"XDG_CONFIG_HOME": "/cfg"},
			filepath.Join("/cfg", "Claude", "claude_desktop_config.json")},
		{"linux", "/home/ann", nil,
			filepath.Join("/home/ann", ".config", "Claude", "claude_desktop_config.json")},
		{"freebsd", "/home/ann", nil,
			filepath.Join("/home/ann", ".config", "Claude", "claude_desktop_config.json")},
	}
	for _, tt := range tests {
		got := DesktopConfig(tt.goos, tt.home, func(k string) string { return tt.env[k] })
		if got != tt.want {
			t.Errorf("%s %v: got %q, want %q", tt.goos, tt.env, got, tt.want)
		}
	}
}
