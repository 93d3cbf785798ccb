package manifest

import (
	"regexp"
	"strings"
	"testing"
)

// nameForms are the forms, with the regexps they stood for when they were
// compiled, which the schema shows.
var nameForms = []struct {
	name string
	form *nameForm
	want string
}{
	{"server", serverName, `^[A-Za-z0-9_-]{1,64}$`},
	{"owner", ownerName, `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`},
	{"prefix", prefixName, `^[A-Za-z0-9_-]{1,32}$`},
	{"tool", toolName, `^[A-Za-z0-9_-]{1,64}$`},
	{"workspace", workspaceID, `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`},
	{"variable", varName, `^[A-Za-z_][A-Za-z0-9_]*$`},
	{"header", headerName, "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"},
}

// nameSamples are strings around every edge of the forms: each character
// class and some outside them, first and elsewhere, and the lengths about
// every bound.
func nameSamples() []string {
	alphabet := []string{"a", "z", "A", "Z", "0", "9", "_", "-", ".", " ", "/", "é", "\x00", "\x7f", "\xff",
		"~", "@", "[", "`", "{", "!", "#", "$", "%", "&", "'", "*", "+", "^", "|", ":", "\"", "\\", "("}
	samples := []string{""}
	for _, a := range alphabet {
		samples = append(samples, a)
		for _, b := range alphabet {
			samples = append(samples, a+b, "x"+a+b, a+b+"x")
		}
	}
	for _, n := range []int{31, 32, 33, 63, 64, 65} {
		for _, edge := range []string{"a", "_", ".", "-", "/"} {
			samples = append(samples,
				strings.Repeat("a", n),
				edge+strings.Repeat("a", n-1),
				strings.Repeat("a", n-1)+edge)
		}
	}
	return samples
}

// TestNameForms holds each form's hand-written match to the regexp it
// writes for the schema, and that regexp to what it was.
func TestNameForms(t *testing.T) {
	samples := nameSamples()
	for _, tt := range nameForms {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.form.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
			re := regexp.MustCompile(tt.want)
			for _, s := range samples {
				if got, want := tt.form.MatchString(s), re.MatchString(s); got != want {
					t.Errorf("MatchString(%q) = %v, want %v (as %s)", s, got, want, tt.want)
				}
			}
		})
	}
}

func FuzzNameForms(f *testing.F) {
	for _, s := range nameSamples() {
		f.Add(s)
	}
	res := make([]*regexp.Regexp, len(nameForms))
	for i, tt := range nameForms {
		res[i] = regexp.MustCompile(tt.form.String())
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tt := range nameForms {
			if got, want := tt.form.MatchString(s), res[i].MatchString(s); got != want {
				t.Errorf("%s: MatchString(%q) = %v, want %v (as %s)", tt.name, s, got, want, res[i])
			}
		}
	})
}
