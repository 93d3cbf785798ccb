package toolsearch

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxWords bounds the words taken of one text (a description, a query):
// a server may describe a tool at any length, and an agent may query with
// a page.
const maxWords = 2048

// words splits text into lower-case words: at every character that is not
// a letter or a digit, and inside identifiers at a change of case
// (createPullRequest, HTTPServer) and between letters and digits, so that
// snake_case, kebab-case and camelCase names read as their words.
func words(text string, out []string) []string {
	var b strings.Builder
	start := -1   // where the word began in text
	plain := true // the word is as it reads in text: lower-case ASCII
	var prev rune // the previous rune of the word, 0 at its start
	flush := func(end int) {
		if start >= 0 && len(out) < maxWords {
			if plain {
				out = append(out, text[start:end]) // no copy
			} else {
				out = append(out, b.String())
			}
		}
		b.Reset()
		start, plain, prev = -1, true, 0
	}
	for i, r := range text {
		if len(out) >= maxWords {
			break
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			// An apostrophe too: don't, it's are two words, the second
			// a stop word.
			flush(i)
			continue
		}
		if prev != 0 && boundary(prev, r, text[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		lower := 'a' <= r && r <= 'z' || '0' <= r && r <= '9'
		if plain && !lower {
			plain = false
			b.WriteString(text[start:i]) // what was plain so far
		}
		if !plain {
			b.WriteRune(unicode.ToLower(r))
		}
		prev = r
	}
	flush(len(text))
	return out
}

// boundary reports whether a word ends between prev and r: lower to upper
// (pullRequest), the last of a run of capitals before a lower-case letter
// (HTTPServer: HTTP, Server), letters to digits and back (sha256sum).
func boundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	}
	return false
}

// stopwordSet holds the words left out of queries and documents: those
// that say nothing of what a tool does, and those users wrap a task in
// ("can you please ... for me"). Made at first use: nothing is built at
// init.
var stopwordSet = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for
		with from into onto as is are was were be been being am do does did done
		it its it's this that these those there here what which who whom whose
		when where why how i me my mine we us our you your yours he him his she
		her they them their can could would should will shall may might must
		please pls just also so some any all each every no not only very too
		s t d ll m re ve want wanna need let lets have has had thing things
		something stuff one ones about via per using`) {
		m[w] = true
	}
	return m
})

func stopword(w string) bool { return stopwordSet()[w] }
