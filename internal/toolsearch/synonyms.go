package toolsearch

import (
	"strings"
	"sync"
)

//go:generate go run ./gen -wordnet /usr/share/wordnet -o synonyms_data.go

// A synonym is a term that a query's term stands for, and how much less it
// counts than the term itself.
type synonym struct {
	term   string
	strong bool
	always bool // computing.txt's: whether or not the index knows the word
}

func (s synonym) weight() float64 {
	if s.strong {
		return strongWeight
	}
	return weakWeight
}

// The weights of synonyms: strong (a shared meaning, a derived word) and
// weak (a broader or narrower word, a word of the definition).
const (
	strongWeight = 0.8
	weakWeight   = 0.3
)

// synonymTable maps a stemmed word to the stemmed words of tools' texts
// that it stands for; parsed from synonymData (synonyms_data.go) at its
// first use.
var synonymTable = sync.OnceValue(func() map[string][]synonym {
	m := map[string][]synonym{}
	for line := range strings.Lines(synonymData) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		syns := make([]synonym, 0, len(f)-1)
		for _, w := range f[1:] {
			switch w[0] {
			case '=':
				syns = append(syns, synonym{term: w[1:], strong: true, always: true})
			case '~':
				syns = append(syns, synonym{term: w[1:]})
			default:
				syns = append(syns, synonym{term: w, strong: true})
			}
		}
		m[f[0]] = syns
	}
	return m
})

// synonyms returns the synonyms of a stemmed word.
func synonyms(term string) []synonym { return synonymTable()[term] }
