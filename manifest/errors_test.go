package manifest

import "testing"

func TestClosest(t *testing.T) {
	serverKeyNames := serverKeys.names()
	tests := []struct {
		word       string
		candidates []string
		want       string // "" when nothing is near enough
	}{
		{"comand", serverKeyNames, "command"},
		{"enviroment", serverKeyNames, "env"},
		{"environment", serverKeyNames, "env"},
		{"Environment", serverKeyNames, "env"},
		{"working_dir", serverKeyNames, "cwd"},
		{"arguments", serverKeyNames, "args"},
		{"rnu", toolKeys.names(), "run"},
		{"command", toolKeys.names(), "run"},
		{"desc", toolKeys.names(), "description"},
		{"timout", toolKeys.names(), "timeout"},
		{"int", argTypes, "integer"},
		{"float", argTypes, "number"},
		{"vresion", topKeys.names(), "version"},
		{"xyz", serverKeyNames, ""},
		{"a", serverKeyNames, ""},
		{"completely_different", serverKeyNames, ""},
	}
	for _, tt := range tests {
		if got, _ := closest(tt.word, tt.candidates); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"run", "run", 0},
		{"rnu", "run", 1}, // a swap is one edit
		{"ab", "ba", 1},   // the same
		{"comand", "command", 1},
		{"kitten", "sitting", 3},
		{"", "env", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}
