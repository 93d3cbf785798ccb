// Package toolsearch ranks the tools of a workspace for a task phrased as
// a user phrases it, offline and the same way every time: the workspace
// gateway's search_tools, and mcpgen tools search.
//
// An Index is built once from the catalogs (New), when they change, and
// answers any number of searches. Its ranking is BM25F over a tool's
// fields, each with its weight: the name split into words (snake_case,
// kebab-case, camelCase), the title, the description, the parameters'
// names and descriptions, and the server's name and description; every
// word stemmed (package stem). A query's words are widened with their
// synonyms (an embedded table: the words of software tasks as people say
// them, and WordNet's for words no tool has; synonyms.go), weighted below
// the words themselves, so that "folder" finds a tool of directories; a
// phrasal verb is first read as the word it means ("look up": search;
// phrases.go), and a word whose shape says what it names as that kind
// (notes.txt: a file, #general: a channel; shapes.go). A
// tool's score grows with the share of the query's words it matches
// (coordination), with the share of them that its own text says as the
// query does (textBonus), with the share of its name's words the query
// has, and with its server's score for the query, all of the server's
// tools taken as one text. A query that is a tool's name, or the
// start of one, ranks that tool first; ties go to the catalog's order.
package toolsearch

import (
	"cmp"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/mcpgen/mcpgen/internal/toolsearch/stem"
)

// A Server is one server of the workspace, as search reads it.
type Server struct {
	Name        string
	Description string
}

// A Param is one parameter of a tool (a property of its input schema).
type Param struct {
	Name        string
	Description string
}

// A Tool is one tool the index ranks.
type Tool struct {
	Name        string // as the gateway exposes it
	Server      string
	Original    string // the server's own name for it; "" when it is Name
	Title       string
	Description string
	Params      []Param
}

// MaxQuery is the longest query, in bytes, that Search takes: a task in a
// sentence or a few, not a document.
const MaxQuery = 1024

// maxParams bounds the parameters of a tool that are indexed.
const maxParams = 64

// The fields of a tool, and how much a word in each counts.
const (
	fieldName = iota
	fieldTitle
	fieldDescription
	fieldParamName
	fieldParamDescription
	fieldServer
	fields
)

// weight is how much a word counts in each field, and b how much a long
// field's words count less (BM25's length normalization).
var (
	weight = [fields]float64{4, 2, 1, 1, 0.4, 0.8}
	b      = [fields]float64{0.3, 0.3, 0.75, 0.5, 0.75, 0.5}
)

// k1 is BM25's saturation: how soon more of a word stops counting.
const k1 = 1.2

// serverWeight is how much a tool's server's score counts beside its own.
const serverWeight = 1.0

// coordination is how much the share of a query's concepts that a tool
// has scales its score.
const coordination = 0.3

// nameBonus is how much a tool's score grows when the query has every
// word of its name (in proportion to the share it has).
const nameBonus = 0.4

// textBonus is how much a tool's score grows when its own text (name,
// title, description) says every word of the query (in proportion to the
// share it says): the word itself, or in the name a strong synonym of it;
// not a weak synonym, nor a parameter's word or the server's. Of two tools
// that match as many of the query's concepts, the one that says what the
// user said is more often the one asked for. Every word of the query that
// is not a stop word counts, known to the index or not.
const textBonus = 1.0

// An Index ranks the tools it was built with. It is read-only once built:
// any number of goroutines may search it.
type Index struct {
	tools    []Tool
	terms    map[string]int32
	postings [][]posting // by term
	names    []names     // by tool

	// A server's tools are one document too, whose score for a query
	// adds to each of them (serverWeight): a query that names what a
	// server is about (the database, a container, Slack) favours its
	// tools over those that share a word by chance.
	servers  []string    // by server; each tool's is server[toolServer[i]]
	serverOf []int32     // by tool
	serverPs [][]posting // by term: the servers that have it

	// nameLen is how many distinct words a tool's name has, its server's
	// name left out (slack_post_message: post, message): a query that
	// has all of them describes the tool, not a neighbour that shares
	// one word with it (nameBonus).
	nameLen []float32 // by tool

	scratch sync.Pool // of *scratch
}

// A posting is a tool that has a term, and what the term is worth there:
// its idf and saturated, weighted frequency, computed once at New.
type posting struct {
	tool  int32
	score float32
	name  bool // the term is a word of the tool's name
	own   bool // of its name, title or description
}

// names are a tool's names as a query is matched against them.
type names struct {
	exposed, original string // lower case
	words             string // the original name's words, joined by spaces
}

// New builds the index of tools; servers describe the servers they name
// (a server not among them is known by its name only).
func New(servers []Server, tools []Tool) *Index {
	ix := &Index{tools: slices.Clone(tools), terms: map[string]int32{}, names: make([]names, len(tools))}
	ix.scratch.New = func() any { return new(scratch) }
	described := map[string]string{}
	for _, s := range servers {
		described[s.Name] = s.Description
	}
	bd := builder{ix: ix, stems: map[string]string{}, slot: map[int32]int{}, all: make([]entry, 0, 32*len(tools))}
	perTool := make([][]entry, len(tools))
	var length [fields][]float64
	for f := range length {
		length[f] = make([]float64, len(tools))
	}
	var total [fields]float64
	serverTerms := map[string][]string{}
	serverNames := map[string][]string{} // the terms of a server's name
	byServer := map[string]int32{}
	var serverDocs [][]entry
	ix.serverOf = make([]int32, len(tools))
	for i, t := range ix.tools {
		own := t.Original
		if own == "" {
			own = t.Name
		}
		ix.names[i] = names{
			exposed:  strings.ToLower(t.Name),
			original: strings.ToLower(own),
			words:    strings.Join(words(own, nil), " "),
		}
		bd.begin()
		add := func(f int, ts []string) {
			bd.addTerms(f, ts)
			length[f][i] += float64(len(ts))
			total[f] += float64(len(ts))
		}
		add(fieldName, bd.terms(own))
		sn, ok := serverNames[t.Server]
		if !ok {
			sn = slices.Clone(bd.terms(t.Server))
			serverNames[t.Server] = sn
		}
		ix.nameLen = append(ix.nameLen, float32(bd.nameWords(sn)))
		add(fieldTitle, bd.terms(t.Title))
		add(fieldDescription, bd.terms(t.Description))
		for j, p := range t.Params {
			if j == maxParams {
				break
			}
			add(fieldParamName, bd.terms(p.Name))
			add(fieldParamDescription, bd.terms(p.Description))
		}
		st, ok := serverTerms[t.Server]
		if !ok {
			st = slices.Clone(bd.terms(t.Server + " " + described[t.Server]))
			serverTerms[t.Server] = st
		}
		add(fieldServer, st)
		perTool[i] = bd.end()

		// The server's document: its own words once, and its tools'
		// names, titles and descriptions.
		s, seen := byServer[t.Server]
		if !seen {
			s = int32(len(ix.servers))
			byServer[t.Server] = s
			ix.servers = append(ix.servers, t.Server)
			serverDocs = append(serverDocs, nil)
		}
		ix.serverOf[i] = s
		for _, e := range perTool[i] {
			k := e.tf[fieldName] + e.tf[fieldTitle] + e.tf[fieldDescription]
			if !seen {
				k += e.tf[fieldServer]
			}
			if k > 0 {
				serverDocs[s] = append(serverDocs[s], entry{id: e.id, tf: [fields]float32{fieldServer: k}})
			}
		}
	}

	n := float64(len(tools))
	var avg [fields]float64
	for f := range avg {
		avg[f] = max(total[f]/max(n, 1), 1)
	}
	ix.postings = make([][]posting, len(ix.terms))
	for i, es := range perTool { // in tool order: so is each posting list
		for _, e := range es {
			var w float64 // BM25F: the fields' frequencies, weighted and normalized, then saturated once
			for f, k := range e.tf {
				if k > 0 {
					w += weight[f] * float64(k) / (1 - b[f] + b[f]*length[f][i]/avg[f])
				}
			}
			own := e.tf[fieldName]+e.tf[fieldTitle]+e.tf[fieldDescription] > 0
			ix.postings[e.id] = append(ix.postings[e.id], posting{tool: int32(i), score: float32(w / (k1 + w)), name: e.tf[fieldName] > 0, own: own})
		}
	}
	weighByIDF(ix.postings, n)
	ix.serverPs = serverPostings(serverDocs, len(ix.terms))
	return ix
}

// serverPostings makes the postings of the servers' documents (BM25, each
// document's entries summed by term), in server order.
func serverPostings(docs [][]entry, terms int) [][]posting {
	sums := make([]map[int32]float64, len(docs))
	lengths := make([]float64, len(docs))
	var total float64
	for s, d := range docs {
		sums[s] = map[int32]float64{}
		for _, e := range d {
			sums[s][e.id] += float64(e.tf[fieldServer])
			lengths[s] += float64(e.tf[fieldServer])
		}
		total += lengths[s]
	}
	n := float64(len(docs))
	avg := max(total/max(n, 1), 1)
	ps := make([][]posting, terms)
	for s := range docs {
		for _, id := range slices.Sorted(maps.Keys(sums[s])) {
			w := sums[s][id] / (1 - 0.75 + 0.75*lengths[s]/avg)
			ps[id] = append(ps[id], posting{tool: int32(s), score: float32(w / (k1 + w))})
		}
	}
	weighByIDF(ps, n)
	return ps
}

// weighByIDF multiplies each posting by its term's idf, of n documents.
func weighByIDF(postings [][]posting, n float64) {
	for _, ps := range postings {
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for j := range ps {
			ps[j].score *= float32(idf)
		}
	}
}

// An entry is a term of a tool, and how many times each field has it.
type entry struct {
	id int32
	tf [fields]float32
}

// A builder turns tools' texts into entries, stemming each word once.
type builder struct {
	ix    *Index
	stems map[string]string
	slot  map[int32]int // a term's entry in cur
	all   []entry       // every tool's entries, one after the other
	start int           // where the current tool's begin in all
	words []string
	out   []string
}

func (bd *builder) begin() {
	clear(bd.slot)
	bd.start = len(bd.all)
}

// end returns the current tool's entries; they stay as they are when
// all grows (a new array, if any, is a copy).
func (bd *builder) end() []entry { return bd.all[bd.start:len(bd.all):len(bd.all)] }

// terms makes the terms of text: its words, stop words left out,
// stemmed (each word once per build); the result is valid until the
// next call.
func (bd *builder) terms(text string) []string {
	bd.words = words(text, bd.words[:0])
	bd.out = bd.out[:0]
	for _, w := range bd.words {
		if stopword(w) {
			continue
		}
		st, ok := bd.stems[w]
		if !ok {
			st = stem.Word(w)
			bd.stems[w] = st
		}
		bd.out = append(bd.out, st)
	}
	return bd.out
}

// nameWords returns how many distinct terms the current tool's name
// has (it must be the only field added yet) that are not among server,
// its server's name's terms.
func (bd *builder) nameWords(server []string) int {
	n := 0
	for _, e := range bd.all[bd.start:] {
		if !slices.ContainsFunc(server, func(t string) bool { id, ok := bd.ix.terms[t]; return ok && id == e.id }) {
			n++
		}
	}
	return n
}

// addTerms counts terms in field f of the current tool.
func (bd *builder) addTerms(f int, ts []string) {
	for _, term := range ts {
		id, ok := bd.ix.terms[term]
		if !ok {
			id = int32(len(bd.ix.terms))
			bd.ix.terms[term] = id
		}
		j, ok := bd.slot[id]
		if !ok {
			j = len(bd.all)
			bd.slot[id] = j
			bd.all = append(bd.all, entry{id: id})
		}
		bd.all[j].tf[f]++
	}
}

// Len returns how many tools the index holds.
func (ix *Index) Len() int { return len(ix.tools) }

// Tools returns the tools the index was built with; they must not be
// modified.
func (ix *Index) Tools() []Tool { return ix.tools }

// A Match says how a query matched a tool's name.
type Match int

const (
	MatchWords  Match = iota // by its words only
	MatchPrefix              // the query is the start of the tool's name
	MatchExact               // the query is the tool's name
)

// A Hit is a tool found, with its score (higher is better).
type Hit struct {
	Tool  int // its index in Tools
	Score float64
	Match Match
}

// Options narrow a search.
type Options struct {
	Server string // only this server's tools; "": every server's
	Limit  int    // the most hits; 0: 8
}

// DefaultLimit is how many hits a search returns when not told.
const DefaultLimit = 8

// Search returns the tools that best fit query, best first, at most
// opts.Limit of them. A query longer than MaxQuery is cut there.
func (ix *Index) Search(query string, opts Options) []Hit {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(query) > MaxQuery {
		query = query[:MaxQuery]
	}
	all := words(query, nil)
	read := all // the words as the query means them
	if shaped := shapes(query); shaped != query {
		read = words(shaped, nil)
	}
	q, concepts, said := ix.query(phrasal(read))
	buf := ix.scratch.Get().(*scratch)
	defer ix.scratch.Put(buf)
	scores, matched, serverScores, named, own := buf.reset(len(ix.tools), len(ix.servers))
	for _, qt := range q {
		for _, p := range ix.postings[qt.id] {
			scores[p.tool] += qt.weight * float64(p.score)
			matched[p.tool] |= qt.concepts
			if p.name {
				named[p.tool] += float32(qt.weight)
			}
			switch { // textBonus
			case p.name && qt.weight >= strongWeight:
				own[p.tool] |= qt.concepts
			case p.own:
				own[p.tool] |= qt.said
			}
		}
		for _, p := range ix.serverPs[qt.id] {
			serverScores[p.tool] += qt.weight * float64(p.score)
		}
	}
	// Coordination: a tool that has more of the query's concepts beats one
	// that has much of a few; share[k] is the factor of k concepts of n.
	n := min(concepts, maxConcepts)
	var share [maxConcepts + 1]float64
	for k := 0; k <= n; k++ {
		share[k] = 1
		if n > 1 {
			share[k] = math.Pow(float64(k)/float64(n), coordination)
		}
	}
	lower := strings.ToLower(strings.TrimSpace(query))
	joined := strings.Join(all, " ")
	var joinedSp string // joined and a space: the words of a name's start
	if joined != "" {
		joinedSp = joined + " "
	}
	top := topK{limit: limit}
	for i := range ix.tools {
		if opts.Server != "" && ix.tools[i].Server != opts.Server {
			continue
		}
		score := scores[i]
		if score > 0 {
			score = (score + serverWeight*serverScores[ix.serverOf[i]]) * share[bits.OnesCount64(matched[i])]
			if l := ix.nameLen[i]; l > 0 {
				score *= 1 + nameBonus*float64(min(named[i]/l, 1))
			}
			if said > 0 {
				score *= 1 + textBonus*float64(bits.OnesCount64(own[i]))/float64(said)
			}
		}
		m := ix.names[i].match(lower, joined, joinedSp)
		if score > 0 || m != MatchWords {
			top.add(Hit{Tool: i, Score: score, Match: m})
		}
	}
	return top.sorted()
}

// better orders hits: by how the name matched, then by score, then by the
// catalog's order.
func better(a, b Hit) int {
	if c := cmp.Compare(b.Match, a.Match); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.Tool, b.Tool)
}

// topK keeps the best limit hits of those added: a sorted slice that a
// new hit enters by insertion while the limit is small, all of them
// sorted at the end when it is not.
type topK struct {
	limit int
	hits  []Hit
}

// insertBelow is the limit under which hits are kept by insertion.
const insertBelow = 64

func (t *topK) add(h Hit) {
	if t.limit >= insertBelow {
		t.hits = append(t.hits, h)
		return
	}
	if len(t.hits) == t.limit && better(h, t.hits[len(t.hits)-1]) >= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(t.hits, h, better)
	if len(t.hits) < t.limit {
		t.hits = append(t.hits, Hit{})
	}
	copy(t.hits[i+1:], t.hits[i:])
	t.hits[i] = h
}

func (t *topK) sorted() []Hit {
	if t.limit >= insertBelow {
		slices.SortFunc(t.hits, better)
		if len(t.hits) > t.limit {
			t.hits = t.hits[:t.limit]
		}
	}
	return t.hits
}

// scratch is a search's working memory, kept between searches.
type scratch struct {
	scores, servers []float64
	matched, own    []uint64
	named           []float32
}

func (s *scratch) reset(tools, servers int) ([]float64, []uint64, []float64, []float32, []uint64) {
	if cap(s.scores) < tools {
		s.scores, s.matched, s.named, s.own = make([]float64, tools), make([]uint64, tools), make([]float32, tools), make([]uint64, tools)
	}
	if cap(s.servers) < servers {
		s.servers = make([]float64, servers)
	}
	s.scores, s.matched, s.servers, s.named, s.own = s.scores[:tools], s.matched[:tools], s.servers[:servers], s.named[:tools], s.own[:tools]
	clear(s.scores)
	clear(s.matched)
	clear(s.servers)
	clear(s.named)
	clear(s.own)
	return s.scores, s.matched, s.servers, s.named, s.own
}

// match says how a query (lower case; its words joined; and those with a
// space after) matches the tool's names.
func (n names) match(lower, joined, joinedSp string) Match {
	switch {
	case lower == "":
		return MatchWords
	case lower == n.exposed || lower == n.original || joined != "" && joined == n.words:
		return MatchExact
	case len(lower) >= 3 && (strings.HasPrefix(n.exposed, lower) || strings.HasPrefix(n.original, lower)),
		joinedSp != "" && strings.HasPrefix(n.words, joinedSp):
		return MatchPrefix
	}
	return MatchWords
}

// A queryTerm is a term of the index that a query asks for, how much,
// which of the query's concepts (its words) it stands for, and of which
// it is the word itself (said; not a synonym).
type queryTerm struct {
	id       int32
	weight   float64
	concepts uint64
	said     uint64
}

// maxConcepts bounds the words of a query that count as concepts: past
// it, words still score but do not count in coordination.
const maxConcepts = 64

// query makes the terms of a query that the index knows (its words, and
// their stems where known, "" where not): its own words
// (each a concept), then the synonyms of each (of the same concept, at a
// lower weight); a term once, at the most it is asked for. It returns the
// terms, how many concepts the index knows anything of, and how many
// words the query has that are not stop words, known or not (at most
// maxConcepts).
func (ix *Index) query(all, stems []string) ([]queryTerm, int, int) {
	byID := map[int32]int{} // into out
	var out []queryTerm
	ask := func(term string, w float64, concept int, itself bool) bool {
		id, ok := ix.terms[term]
		if !ok {
			return false
		}
		var bit, said uint64
		if concept < maxConcepts {
			bit = 1 << concept
		}
		if itself {
			said = bit
		}
		if j, seen := byID[id]; seen {
			out[j].weight = max(out[j].weight, w)
			out[j].concepts |= bit
			out[j].said |= said
			return true
		}
		byID[id] = len(out)
		out = append(out, queryTerm{id: id, weight: w, concepts: bit, said: said})
		return true
	}
	concepts, unknown := 0, 0
	seen := map[string]bool{}
	for i, w := range all {
		t := stems[i]
		if t == "" {
			t = stem.Word(w)
		}
		if seen[t] {
			continue
		}
		seen[t] = true
		known := false
		if !stopword(w) {
			known = ask(t, 1, concepts, true)
		}
		own := known
		for _, s := range synonyms(t) { // a stop word may stand for a term: which, for list
			if own && !s.always {
				// WordNet's synonyms widen only the words that no tool
				// has: for the others they were measured to add more
				// noise than matches.
				continue
			}
			wt := s.weight()
			if stopword(w) {
				wt = weakWeight
			}
			known = ask(s.term, wt, concepts, false) || known
		}
		switch {
		case stopword(w):
		case known:
			concepts++
		default:
			unknown++ // a word no tool has: it counts against every tool's share
		}
	}
	return out, concepts, min(concepts+unknown, maxConcepts)
}
