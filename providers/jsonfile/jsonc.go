package jsonfile

import "fmt"

// blankComments returns a copy of data with its comments (// to the end of the line,
// /* to */) and its trailing commas (a comma before } or ]) replaced by spaces, line breaks
// kept: strict JSON at the same offsets, so that positions found in it name the same bytes
// of data. That is how JSONC (VS Code's settings, Zed's, opencode.jsonc) is read and kept.
func blankComments(data []byte) ([]byte, error) {
	out := make([]byte, len(data))
	copy(out, data)
	lastComma := -1 // a comma with only blanks and comments after it so far
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			i = skipString(out, i) - 1
			lastComma = -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				if out[i] != '\r' {
					out[i] = ' '
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			start := i
			out[i], out[i+1] = ' ', ' '
			for i += 2; ; i++ {
				if i+1 >= len(out) {
					line, col := Position(data, start)
					return nil, fmt.Errorf("%d:%d: invalid JSON: a comment that starts here has no end (*/)", line, col)
				}
				if out[i] == '*' && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			lastComma = -1
		}
	}
	return out, nil
}
