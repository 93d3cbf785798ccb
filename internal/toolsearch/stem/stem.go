// Package stem reduces English words to their stems by Porter's algorithm
// (M. F. Porter, "An algorithm for suffix stripping", 1980), so that
// "listing", "lists" and "listed" are one term to tool search. It is its
// own package because the synonym table's generator stems the words it
// writes with the very same function that stems queries.
package stem

// Word returns the stem of a lower-case word. Words of other characters
// than a-z, and words of one or two letters, are returned as they are.
func Word(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	b := []byte(w)
	b = step1a(b)
	b = step1b(b)
	b = step1c(b)
	b = step2(b)
	b = step3(b)
	b = step4(b)
	b = step5(b)
	return string(b)
}

// consonant reports whether b[i] is a consonant: not a vowel, and a y only
// at the start or after a vowel.
func consonant(b []byte, i int) bool {
	switch b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !consonant(b, i-1)
	}
	return true
}

// measure is Porter's m: the number of vowel-consonant sequences in b.
func measure(b []byte) int {
	m, i, n := 0, 0, len(b)
	for i < n && consonant(b, i) {
		i++
	}
	for i < n {
		for i < n && !consonant(b, i) {
			i++
		}
		if i == n {
			break
		}
		for i < n && consonant(b, i) {
			i++
		}
		m++
	}
	return m
}

func hasVowel(b []byte) bool {
	for i := range b {
		if !consonant(b, i) {
			return true
		}
	}
	return false
}

// doubleConsonant reports whether b ends with a double consonant.
func doubleConsonant(b []byte) bool {
	n := len(b)
	return n >= 2 && b[n-1] == b[n-2] && consonant(b, n-1)
}

// cvc reports whether b ends consonant-vowel-consonant, the last not w, x
// or y (hop, not hoy).
func cvc(b []byte) bool {
	n := len(b)
	if n < 3 || !consonant(b, n-3) || consonant(b, n-2) || !consonant(b, n-1) {
		return false
	}
	switch b[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}

func step1a(b []byte) []byte {
	switch {
	case hasSuffix(b, "sses"), hasSuffix(b, "ies"):
		return b[:len(b)-2]
	case hasSuffix(b, "ss"):
		return b
	case hasSuffix(b, "s"):
		return b[:len(b)-1]
	}
	return b
}

func step1b(b []byte) []byte {
	if hasSuffix(b, "eed") {
		if measure(b[:len(b)-3]) > 0 {
			return b[:len(b)-1]
		}
		return b
	}
	var stem []byte
	switch {
	case hasSuffix(b, "ed") && hasVowel(b[:len(b)-2]):
		stem = b[:len(b)-2]
	case hasSuffix(b, "ing") && hasVowel(b[:len(b)-3]):
		stem = b[:len(b)-3]
	default:
		return b
	}
	switch {
	case hasSuffix(stem, "at"), hasSuffix(stem, "bl"), hasSuffix(stem, "iz"):
		return append(stem, 'e')
	case doubleConsonant(stem):
		if c := stem[len(stem)-1]; c != 'l' && c != 's' && c != 'z' {
			return stem[:len(stem)-1]
		}
	case measure(stem) == 1 && cvc(stem):
		return append(stem, 'e')
	}
	return stem
}

func step1c(b []byte) []byte {
	if hasSuffix(b, "y") && hasVowel(b[:len(b)-1]) {
		b[len(b)-1] = 'i'
	}
	return b
}

// A rule replaces a suffix when the stem before it measures more than min.
type rule struct{ suffix, with string }

// replace applies the first rule whose suffix b has (rules are ordered so
// that the longest comes first among those that overlap), if the stem
// before it measures more than min; only that rule is tried.
func replace(b []byte, rules []rule, min int) []byte {
	for _, r := range rules {
		if !hasSuffix(b, r.suffix) {
			continue
		}
		stem := b[:len(b)-len(r.suffix)]
		if measure(stem) > min {
			return append(stem, r.with...)
		}
		return b
	}
	return b
}

var step2Rules = []rule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"},
	{"eli", "e"}, {"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"},
	{"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"},
	{"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

func step2(b []byte) []byte { return replace(b, step2Rules, 0) }

var step3Rules = []rule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func step3(b []byte) []byte { return replace(b, step3Rules, 0) }

var step4Rules = []rule{
	{"al", ""}, {"ance", ""}, {"ence", ""}, {"er", ""}, {"ic", ""},
	{"able", ""}, {"ible", ""}, {"ant", ""}, {"ement", ""}, {"ment", ""},
	{"ent", ""}, {"ion", ""}, {"ou", ""}, {"ism", ""}, {"ate", ""},
	{"iti", ""}, {"ous", ""}, {"ive", ""}, {"ize", ""},
}

func step4(b []byte) []byte {
	for _, r := range step4Rules {
		if !hasSuffix(b, r.suffix) {
			continue
		}
		// ement, ment and ent overlap: the longest that fits is the one.
		stem := b[:len(b)-len(r.suffix)]
		if r.suffix == "ion" {
			if n := len(stem); n == 0 || stem[n-1] != 's' && stem[n-1] != 't' {
				return b
			}
		}
		if measure(stem) > 1 {
			return stem
		}
		return b
	}
	return b
}

func step5(b []byte) []byte {
	if hasSuffix(b, "e") {
		stem := b[:len(b)-1]
		if m := measure(stem); m > 1 || m == 1 && !cvc(stem) {
			b = stem
		}
	}
	if measure(b) > 1 && doubleConsonant(b) && b[len(b)-1] == 'l' {
		b = b[:len(b)-1]
	}
	return b
}
