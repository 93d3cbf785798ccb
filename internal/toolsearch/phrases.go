package toolsearch

import (
	"strings"
	"sync"

	"github.com/mcpgen/mcpgen/internal/toolsearch/stem"
)

// phraseData holds the phrases people put tasks in, each with the words
// a tool would use for it. First the phrasal verbs: a particle alone
// misleads ("look up the docs" is a search, not compose_up), and a verb
// alone too ("shut down" is not a shutting). Then the questions whose
// words each say little of what is asked ("who can see" the file asks for
// its permissions). A line: the phrase, a colon, the words it means.
// Written from general English usage, for any workspace.
const phraseData = `
look up : search
look through : search
look into : search
look for : search
pull up : open
open up : open
bring up : start
start up : start
boot up : start
fire up : start
kick off : start
spin up : create
set up : create
sign up : create
bring back : restore
shut down : stop
wind down : stop
take down : stop
tear down : remove
throw away : delete
throw out : delete
get rid : delete
clean up : delete
clear out : delete
free up : remove
turn on : enable
switch on : enable
turn off : disable
switch off : disable
go back : back
go to : navigate
find out : find
check out : checkout
sign in : login
log in : login
sign out : logout
log out : logout
fill in : fill
fill out : fill
write down : note
jot down : note
note down : note
roll out : deploy
roll back : rollback
back up : backup
print out : print
add up : sum
sum up : summarize

who can see : permission
who can access : permission
who has access : permission
how big : size
how large : size
how much space : size
how much disk : size
how much room : size
who changed : history
who edited : history
who modified : history
what changed : diff
where is : find
where are : find
keep in mind : remember
keep track : remember
`

// maxPhrase is the most words of a phrase.
const maxPhrase = 3

// phraseTable maps a phrase (its words stemmed, joined by spaces) to the
// words it means; parsed at first use.
var phraseTable = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for line := range strings.Lines(phraseData) {
		phrase, means, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var key []string
		for _, w := range strings.Fields(phrase) {
			key = append(key, stem.Word(w))
		}
		m[strings.Join(key, " ")] = strings.Fields(means)
	}
	return m
})

// phrasal returns the words of a query with each phrase it knows, the
// longest first, replaced by the words it means, and the stems of the
// words ("" where not yet known: each word is stemmed once).
func phrasal(all []string) (words, stems []string) {
	stems = make([]string, len(all))
	if len(all) < 2 {
		return all, stems
	}
	var out, outStems []string
	for i := 0; i < len(all); i++ {
		if means, n := phraseAt(all[i:], stems[i:]); n > 0 {
			if out == nil {
				out = append(make([]string, 0, len(all)), all[:i]...)
				outStems = append(make([]string, 0, len(all)), stems[:i]...)
			}
			out = append(out, means...)
			outStems = append(outStems, make([]string, len(means))...)
			i += n - 1
			continue
		}
		if out != nil {
			out = append(out, all[i])
			outStems = append(outStems, stems[i])
		}
	}
	if out == nil {
		return all, stems
	}
	return out, outStems
}

// phraseAt returns the meaning of the longest phrase that ws begin with,
// and its length in words; 0 if none. stems are the stems of ws, "" where
// not yet known; it fills them in.
func phraseAt(ws, stems []string) ([]string, int) {
	if len(ws) < 2 {
		return nil, 0
	}
	var key [maxPhrase]string
	for n := range min(len(ws), maxPhrase) {
		if stems[n] == "" {
			stems[n] = stem.Word(ws[n])
		}
		key[n] = stems[n]
	}
	for n := min(len(ws), maxPhrase); n >= 2; n-- {
		if means, ok := phraseTable()[strings.Join(key[:n], " ")]; ok {
			return means, n
		}
	}
	return nil, 0
}
