package toolsearch

import (
	"strings"
	"unicode"
)

// Some words of a task say what kind of thing they name by their shape
// alone: notes.txt is a file, #general a channel, PAY-12 an issue,
// https://example.com/post a URL, bob@example.com an email address. Their
// pieces mislead (the go of main.go is not a navigation, the post of a
// URL not a message to post), so shapes reads each such word as the kind
// it names; and so :tada: is an emoji, @sam a user, 9:30 or 3pm the
// time of an event.

// fileExtensions are the extensions that make a word a file's name.
var fileExtensions = map[string]string{ // the extension: what else the file is
	"txt": "", "md": "", "json": "", "yaml": "", "yml": "", "toml": "",
	"xml": "", "csv": "", "tsv": "", "log": "", "ini": "", "cfg": "",
	"conf": "", "env": "", "lock": "", "mod": "", "sum": "", "sql": "",
	"go": "", "py": "", "js": "", "ts": "", "tsx": "", "jsx": "", "rs": "",
	"java": "", "c": "", "h": "", "cpp": "", "rb": "", "sh": "", "html": "",
	"css": "", "pdf": "", "doc": "", "docx": "", "xls": "", "xlsx": "",
	"ppt": "", "pptx": "", "zip": "", "gz": "", "tar": "", "tgz": "",
	"bak": "",
	"png": "image", "jpg": "image", "jpeg": "image", "gif": "image",
	"svg": "image", "webp": "image", "mp4": "video", "mov": "video",
	"mp3": "audio", "wav": "audio",
}

// shapes returns query with each word whose shape names a kind of thing
// replaced by that kind's words; query itself when it has none.
func shapes(query string) string {
	if !strings.ContainsAny(query, ".#@:-0123456789") {
		return query // no shape has none of these
	}
	fields := strings.Fields(query)
	changed := false
	for i, f := range fields {
		w := strings.Trim(f, `"'()[]{}<>,;!?.`)
		kind := shapeOf(w) // :tada: before its colons are trimmed
		if kind == "" {
			kind = shapeOf(strings.Trim(f, `"'()[]{}<>,;:!?.`))
		}
		if kind != "" {
			fields[i] = kind
			changed = true
		}
	}
	if !changed {
		return query
	}
	return strings.Join(fields, " ")
}

// shapeOf returns the words of the kind of thing w names by its shape,
// or "".
func shapeOf(w string) string {
	switch {
	case len(w) < 3:
		return ""
	case strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://") || strings.HasPrefix(w, "www."):
		return "url"
	case strings.HasPrefix(w, "#") && plainWord(w[1:]):
		return "channel"
	case strings.HasPrefix(w, "@") && plainWord(w[1:]):
		return "user"
	case strings.HasPrefix(w, ":") && strings.HasSuffix(w, ":") && plainWord(w[1:len(w)-1]):
		return "emoji reaction"
	}
	if clock(w) {
		return "event time"
	}
	if at := strings.IndexByte(w, '@'); at > 0 && strings.Contains(w[at:], ".") {
		return "email address"
	}
	if key, n, ok := strings.Cut(w, "-"); ok && len(key) >= 2 && allOf(key, unicode.IsUpper) && n != "" && allOf(n, unicode.IsDigit) {
		return "issue"
	}
	if dot := strings.LastIndexByte(w, '.'); dot > 0 && !strings.ContainsAny(w, "@:") {
		if kind, ok := fileExtensions[strings.ToLower(w[dot+1:])]; ok {
			return strings.TrimSpace("file " + kind)
		}
	}
	return ""
}

// plainWord reports whether w is letters, digits, - and _ only, at least one.
func plainWord(w string) bool {
	return w != "" && allOf(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' })
}

func allOf(s string, f func(rune) bool) bool {
	for _, r := range s {
		if !f(r) {
			return false
		}
	}
	return true
}

// clock reports whether w is a time of day: 9:30, 3pm, 10am, 11:15am.
func clock(w string) bool {
	w = strings.ToLower(w)
	t := strings.TrimSuffix(strings.TrimSuffix(w, "am"), "pm")
	h, m, colon := strings.Cut(t, ":")
	if h == "" || len(h) > 2 || !allOf(h, unicode.IsDigit) {
		return false
	}
	if colon {
		return len(m) == 2 && allOf(m, unicode.IsDigit)
	}
	return t != w // 3pm: a number of hours, then am or pm
}
