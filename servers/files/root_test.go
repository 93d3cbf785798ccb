package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBroadRootRefused: the root of the file system and the home
// directory are refused as the workspace, through a symlink too, unless
// BroadRoot; any other directory is served.
func TestBroadRootRefused(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	link := filepath.Join(t.TempDir(), "home-link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.VolumeName(home) + string(filepath.Separator)
	tests := []struct {
		root    string
		broad   bool
		wantErr string
	}{
		{root, false, "is the root of the file system"},
		{home, false, "is your home directory"},
		{link, false, "is your home directory"},
		{root, true, ""},
		{home, true, ""},
		{project, false, ""},
	}
	for _, tt := range tests {
		_, err := New(Options{Root: tt.root, BroadRoot: tt.broad})
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("New(%s, broad %v): %v, want a server", tt.root, tt.broad, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("New(%s, broad %v): got %v, want an error saying it %s", tt.root, tt.broad, err, tt.wantErr)
		}
	}
}
