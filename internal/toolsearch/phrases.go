package toolsearch

import (
	"strings"
	"sync"

	"github.com/mcpgen/mcpgen/internal/toolsearch/stem"
)

// phraseData holds the phrasal verbs people put tasks in, each with the
// word a tool would use for it: a phrase's particle alone misleads ("look
// up the docs" is a search, not compose_up), and its verb alone too
// ("shut down" is not a shutting). A line: the verb, the particle, the
// word. Written from general English usage, for any workspace.
const phraseData = `
look up search
look through search
look into search
look for search
pull up open
open up open
bring up start
start up start
boot up start
fire up start
kick off start
spin up create
set up create
sign up create
bring back restore
shut down stop
wind down stop
take down stop
tear down remove
throw away delete
throw out delete
get rid delete
clean up delete
clear out delete
free up remove
turn on enable
switch on enable
turn off disable
switch off disable
go back back
go to navigate
find out find
check out checkout
sign in login
log in login
sign out logout
log out logout
fill in fill
fill out fill
write down note
jot down note
note down note
roll out deploy
roll back rollback
back up backup
print out print
add up sum
sum up summarize
`

// phraseTable maps a phrasal verb (its verb stemmed, a space, its
// particle) to the word it means; parsed at first use.
var phraseTable = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(phraseData) {
		if f := strings.Fields(line); len(f) == 3 {
			m[stem.Word(f[0])+" "+f[1]] = f[2]
		}
	}
	return m
})

// phrasal returns the words of a query with each phrasal verb it knows
// replaced by the word it means.
func phrasal(all []string) []string {
	var out []string
	for i := 0; i < len(all); i++ {
		if i+1 < len(all) {
			if w, ok := phraseTable()[stem.Word(all[i])+" "+all[i+1]]; ok {
				if out == nil {
					out = append(make([]string, 0, len(all)), all[:i]...)
				}
				out = append(out, w)
				i++
				continue
			}
		}
		if out != nil {
			out = append(out, all[i])
		}
	}
	if out == nil {
		return all
	}
	return out
}
