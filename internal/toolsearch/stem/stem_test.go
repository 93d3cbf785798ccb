package stem

import "testing"

// The outputs are those of Porter's published algorithm (its paper's
// examples, passed through every step).
func TestWord(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"caresses", "caress"}, {"ponies", "poni"}, {"cats", "cat"},
		{"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"},
		{"bled", "bled"}, {"motoring", "motor"}, {"sing", "sing"},
		{"conflated", "conflat"}, {"troubled", "troubl"}, {"sized", "size"},
		{"hopping", "hop"}, {"tanned", "tan"}, {"falling", "fall"},
		{"hissing", "hiss"}, {"fizzed", "fizz"}, {"failing", "fail"},
		{"filing", "file"}, {"happy", "happi"}, {"sky", "sky"},
		{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
		{"generalization", "gener"}, {"oscillators", "oscil"},
		{"listing", "list"}, {"lists", "list"}, {"listed", "list"},
		{"directories", "directori"}, {"directory", "directori"},
		{"connection", "connect"}, {"connections", "connect"}, {"connected", "connect"},
		{"adjustment", "adjust"}, {"dependent", "depend"}, {"controll", "control"},
		{"rate", "rate"}, {"roll", "roll"}, {"probate", "probat"},
		// left alone
		{"go", "go"}, {"k8s", "k8s"}, {"", ""}, {"café", "café"},
	} {
		if got := Word(tc.in); got != tc.want {
			t.Errorf("Word(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func BenchmarkWord(b *testing.B) {
	words := []string{"listing", "directories", "generalization", "file", "repository"}
	for i := 0; b.Loop(); i++ {
		Word(words[i%len(words)])
	}
}
