package manifest

import (
	"slices"
	"testing"
)

// TestArgRefs: {name} refers to an argument; {{name}} is the text {name};
// braces around anything else are text.
func TestArgRefs(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"{a}", []string{"a"}},
		{"x{a}y{b_2}", []string{"a", "b_2"}},
		{"{{a}}", nil},
		{"HEAD@{{upstream}}", nil},
		{"{{a}}{b}", []string{"b"}},
		{"{{.Names}}", nil},
		{"{{json .}}", nil},
		{"{}", nil},
		{"{ a }", nil},
		{"{1}", nil},
		{"{a", nil},
		{"{{a}", []string{"a"}}, // a brace of text, then {a}
		{"{{{a}}}", nil},
	}
	for _, tt := range tests {
		if got := ArgRefs(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("ArgRefs(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
