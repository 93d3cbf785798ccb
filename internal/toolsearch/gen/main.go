// Gen writes tool search's synonym table (../synonyms_data.go) from
// WordNet 3.0 as Debian's wordnet-base package installs it
// (/usr/share/wordnet), and from a few equivalences of computing that
// WordNet lacks (computing.txt): go generate in the package runs it.
//
// The table's keys are the common words of English: those of which
// WordNet's concordance tagged a sense at least once. Its values are the
// words of vocabulary.txt, the verbs and nouns that tools' texts are made
// of, that WordNet relates a key to in one of its three most frequent
// senses: strongly when they share a synset or one is derived from the
// other (remember, memory), weakly (a ~ before the word) when one is the
// other's direct hypernym or hyponym, or in the gloss of the key's first
// sense. computing.txt's come first (an = before the word): search uses
// them for every word of a query, WordNet's only for the words that no
// tool has. Every word is stemmed as a query's words are, so the table
// reads stems to stems.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpgen/mcpgen/internal/toolsearch/stem"
)

var (
	wordnet = flag.String("wordnet", "/usr/share/wordnet", "WordNet 3.0's dict directory")
	out     = flag.String("o", "synonyms_data.go", "the Go file to write")
	senses  = flag.Int("senses", 3, "how many of a word's most frequent senses count")
	most    = flag.Int("max", 8, "the most values of a key")
)

// A synset is one meaning, with the words that have it.
type synset struct {
	words    []string
	pointers []pointer
	gloss    string
}

type pointer struct {
	symbol string
	target string // pos:offset
	word   int    // the target's word it points at (lexical pointers); 0: the synset
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	flag.Parse()
	vocab, err := readWords("gen/vocabulary.txt")
	if err != nil {
		log.Fatal(err)
	}
	computing, err := readLines("gen/computing.txt")
	if err != nil {
		log.Fatal(err)
	}
	vocabulary := map[string]bool{}
	for _, w := range vocab {
		vocabulary[stem.Word(w)] = true
	}
	synsets := map[string]*synset{}
	index := map[string][]string{} // lemma: its synsets, most frequent first, over the parts of speech
	for _, pos := range []string{"noun", "verb", "adj"} {
		if err := readData(filepath.Join(*wordnet, "data."+pos), synsets); err != nil {
			log.Fatal(err)
		}
		if err := readIndex(filepath.Join(*wordnet, "index."+pos), index); err != nil {
			log.Fatal(err)
		}
	}

	strong := map[string]map[string]bool{}
	weak := map[string]map[string]bool{}
	relate := func(to map[string]map[string]bool, key, word string) {
		v := stem.Word(word)
		if !vocabulary[v] || v == key || !single(word) {
			return
		}
		if to[key] == nil {
			to[key] = map[string]bool{}
		}
		to[key][v] = true
	}
	for lemma, ids := range index {
		if !single(lemma) || len(lemma) < 3 {
			continue
		}
		key := stem.Word(lemma)
		for i, id := range ids {
			s := synsets[id]
			if s == nil {
				continue
			}
			for _, w := range s.words {
				relate(strong, key, w)
			}
			for _, p := range s.pointers {
				t := synsets[p.target]
				if t == nil {
					continue
				}
				switch {
				case p.symbol == "+": // derivationally related
					for j, w := range t.words {
						if p.word == 0 || p.word == j+1 {
							relate(strong, key, w)
						}
					}
				case i == 0 && (p.symbol == "@" || p.symbol == "~"): // hypernym, hyponym
					for _, w := range t.words {
						relate(weak, key, w)
					}
				}
			}
			if i == 0 {
				for _, w := range glossWords(s.gloss) {
					relate(weak, key, w)
				}
			}
		}
	}
	hand := map[string]map[string]bool{} // first in a key's values, never cut
	for _, line := range computing {
		to, from, oneWay := strings.Cut(line, ":")
		if !oneWay {
			from = to
		}
		for _, a := range strings.Fields(from) {
			for _, b := range strings.Fields(to) {
				if ka, kb := stem.Word(a), stem.Word(b); ka != kb {
					if hand[ka] == nil {
						hand[ka] = map[string]bool{}
					}
					hand[ka][kb] = true // whether in the vocabulary or not
				}
			}
		}
	}

	var data strings.Builder
	all := map[string]bool{}
	for _, m := range []map[string]map[string]bool{hand, strong, weak} {
		for k := range m {
			all[k] = true
		}
	}
	keys := slices.Sorted(maps.Keys(all))
	entries := 0
	for _, k := range keys {
		var vals []string
		for _, w := range slices.Sorted(maps.Keys(hand[k])) {
			vals = append(vals, "="+w)
		}
		for _, w := range slices.Sorted(maps.Keys(strong[k])) {
			if !hand[k][w] && len(vals) < *most {
				vals = append(vals, w)
			}
		}
		for _, w := range slices.Sorted(maps.Keys(weak[k])) {
			if !hand[k][w] && !strong[k][w] && len(vals) < *most {
				vals = append(vals, "~"+w)
			}
		}
		data.WriteString(k)
		for _, v := range vals {
			data.WriteByte(' ')
			data.WriteString(v)
		}
		data.WriteByte('\n')
		entries++
	}
	license, err := os.ReadFile(filepath.Join(*wordnet, "..", "doc", "wordnet-base", "copyright"))
	if err != nil {
		license = nil // the notice below names the licence all the same
	}
	var src bytes.Buffer
	fmt.Fprintf(&src, "// Code generated by gen (go generate); DO NOT EDIT.\n\n")
	fmt.Fprintf(&src, "// The synonym table of tool search: %d words, drawn from WordNet 3.0\n", entries)
	fmt.Fprintf(&src, "// (Debian's wordnet-base) and gen/computing.txt. WordNet's licence asks\n")
	fmt.Fprintf(&src, "// that its notice go with every copy of the database, and of what is made\n// of it:\n//\n")
	for line := range strings.Lines(string(wordnetNotice(license))) {
		fmt.Fprintf(&src, "//\t%s", line)
	}
	fmt.Fprintf(&src, "\npackage toolsearch\n\n// synonymData is the table, a key a line: the key, then its synonyms;\n// = marks computing.txt's, ~ a weak one of WordNet's.\nconst synonymData = %s\n", "`"+data.String()+"`")
	formatted, err := format.Source(src.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, formatted, 0o666); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d keys, %d bytes of data, %d bytes in all", *out, entries, data.Len(), len(formatted))
}

// wordnetNotice is the WordNet 3.0 licence of the Debian copyright file,
// from its "License: WordNet3.0" line to the next paragraph of files.
func wordnetNotice(copyright []byte) []byte {
	text := string(copyright)
	start := strings.Index(text, "License: WordNet3.0")
	if start < 0 {
		log.Fatal("the WordNet licence is not in the wordnet-base copyright file: the table cannot be written without it")
	}
	text = text[start:]
	if end := strings.Index(text, "\n\nFiles:"); end >= 0 {
		text = text[:end]
	}
	var b strings.Builder
	for line := range strings.Lines(text) {
		line = strings.TrimPrefix(line, " ")
		if strings.TrimSpace(line) == "." {
			line = "\n"
		}
		b.WriteString(line)
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
}

// single reports whether w is one word of a-z.
func single(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return w != ""
}

// glossWords are the words of a gloss's definition, before its examples.
func glossWords(gloss string) []string {
	def, _, _ := strings.Cut(gloss, ";")
	def, _, _ = strings.Cut(def, "\"")
	return strings.FieldsFunc(strings.ToLower(def), func(r rune) bool { return r < 'a' || r > 'z' })
}

// readData reads a data.POS file into synsets, keyed POS:OFFSET.
func readData(path string, synsets map[string]*synset) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") { // the licence
			continue
		}
		body, gloss, _ := strings.Cut(line, " | ")
		f := strings.Fields(body)
		if len(f) < 4 {
			return fmt.Errorf("%s:%d: too short", path, n)
		}
		pos := posOf(f[2])
		count, err := strconv.ParseInt(f[3], 16, 0)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		s := &synset{gloss: gloss}
		i := 4
		for range count {
			if i+1 >= len(f) {
				return fmt.Errorf("%s:%d: too few words", path, n)
			}
			w := strings.ToLower(f[i])
			if k := strings.IndexByte(w, '('); k > 0 { // adjectives' (a), (p), (ip)
				w = w[:k]
			}
			s.words = append(s.words, w)
			i += 2
		}
		if i >= len(f) {
			return fmt.Errorf("%s:%d: no pointer count", path, n)
		}
		pointers, err := strconv.Atoi(f[i])
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		i++
		for range pointers {
			if i+3 >= len(f) {
				return fmt.Errorf("%s:%d: too few pointers", path, n)
			}
			st, err := strconv.ParseUint(f[i+3], 16, 16)
			if err != nil {
				return fmt.Errorf("%s:%d: %v", path, n, err)
			}
			s.pointers = append(s.pointers, pointer{symbol: f[i], target: posOf(f[i+2]) + ":" + f[i+1], word: int(st & 0xff)})
			i += 4
		}
		synsets[pos+":"+f[0]] = s
	}
	return sc.Err()
}

// readIndex reads an index.POS file: the synsets of each lemma that the
// concordance tagged at least once, most frequent first.
func readIndex(path string, index map[string][]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 {
			return fmt.Errorf("%s:%d: too short", path, n)
		}
		pos := posOf(f[1])
		ptrs, err := strconv.Atoi(f[3])
		if err != nil || len(f) < 6+ptrs {
			return fmt.Errorf("%s:%d: bad pointer count", path, n)
		}
		tagged, err := strconv.Atoi(f[5+ptrs])
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if tagged == 0 {
			continue // a rare word: no query needs it
		}
		offsets := f[6+ptrs:]
		if len(offsets) > *senses {
			offsets = offsets[:*senses]
		}
		for _, o := range offsets {
			index[f[0]] = append(index[f[0]], pos+":"+o)
		}
	}
	return sc.Err()
}

// posOf folds satellite adjectives (s) into adjectives (a).
func posOf(p string) string {
	if p == "s" {
		return "a"
	}
	return p
}

// readWords reads the words of a file, # comments left out.
func readWords(path string) ([]string, error) {
	lines, err := readLines(path)
	var out []string
	for _, l := range lines {
		out = append(out, strings.Fields(l)...)
	}
	return out, err
}

// readLines reads a file's lines that are not blank or # comments.
func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, strings.ToLower(line))
		}
	}
	return out, nil
}
