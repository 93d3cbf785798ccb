package httpauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// A digest is a token's SHA-256: tokens are held and compared as digests,
// so that every comparison is of 32 bytes, whatever the lengths, and none
// stops at the first byte that differs.
type digest [sha256.Size]byte

// digestOf is a token's digest.
func digestOf(tok string) digest { return sha256.Sum256([]byte(tok)) }

// matches reports whether tok is one of set. It compares tok with every
// token of the set, each in constant time, and does not stop at a match:
// the time it takes says nothing of which token matched, or of how much
// of one.
func matches(set []digest, tok string) bool {
	d := digestOf(tok)
	found := 0
	for i := range set {
		found |= subtle.ConstantTimeCompare(set[i][:], d[:])
	}
	return found == 1
}

// Bounds of a tokens file: it is read again at any change, on the request
// path, and must not make that slow.
const (
	maxTokensFileSize = 1 << 20
	maxTokens         = 10000
)

// tokensFile is a tokens file, read again when it changes: its digests,
// and the file they were read from. Every request stats it (cheap, and
// nothing to own: no watcher, no goroutine); a change of its size, its
// modification time or the file itself (a new one renamed over it, a
// Kubernetes secret's link swapped) reads it again. A file that goes
// missing, or cannot be read, admits no one until it is back.
type tokensFile struct {
	path string

	mu   sync.Mutex
	info os.FileInfo // of the content held; nil: none (missing or unreadable)
	set  []digest
	// bad is the error of the last read that failed, so that it is logged
	// once, not at every request.
	bad string
}

// openTokensFile reads the tokens file at path for the first time: a file
// that is missing, too big or holds a line that is not a token is an
// error, which fails the launch.
func openTokensFile(path string) (*tokensFile, error) {
	f := &tokensFile{path: path}
	info, set, errs := readTokens(path)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	f.info, f.set = info, set
	return f, nil
}

// current returns the file's tokens, read again first when it changed.
// What is wrong with the new content is logged (a bad line is left out,
// the others are kept).
func (f *tokensFile) current(log *slog.Logger) []digest {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err == nil && f.info != nil && os.SameFile(fi, f.info) && fi.Size() == f.info.Size() && fi.ModTime().Equal(f.info.ModTime()) {
		return f.set
	}
	info, set, errs := readTokens(f.path)
	f.info, f.set = info, set
	if len(errs) == 0 {
		if f.bad != "" || info != nil {
			log.Info("http: tokens file read again", "file", f.path, "tokens", len(set))
		}
		f.bad = ""
		return f.set
	}
	if msg := errors.Join(errs...).Error(); msg != f.bad {
		f.bad = msg
		log.Warn("http: tokens file", "file", f.path, "tokens", len(set), "error", msg)
	}
	return f.set
}

// readTokens reads a tokens file: one token a line, blank lines and lines
// that start with # ignored, spaces around a token trimmed. It returns the
// file's info (nil when it cannot be read), the digests of its good lines,
// and what is wrong: errors that name the line, never its content.
func readTokens(path string) (os.FileInfo, []digest, []error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, []error{err}
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, nil, []error{err}
	}
	if !info.Mode().IsRegular() {
		return nil, nil, []error{fmt.Errorf("%s is not a regular file", path)}
	}
	data, err := io.ReadAll(io.LimitReader(file, maxTokensFileSize+1))
	if err != nil {
		return nil, nil, []error{err}
	}
	if len(data) > maxTokensFileSize {
		return nil, nil, []error{fmt.Errorf("%s is longer than %d bytes, the most a tokens file may have", path, maxTokensFileSize)}
	}
	var set []digest
	var errs []error
	for i, line := range bytes.Split(data, []byte("\n")) {
		tok := strings.TrimSpace(string(line))
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		if err := checkToken(tok); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: the line %v", path, i+1, err))
			continue
		}
		if len(set) == maxTokens {
			errs = append(errs, fmt.Errorf("%s:%d: more than %d tokens: the rest are left out", path, i+1, maxTokens))
			break
		}
		set = append(set, digestOf(tok))
	}
	return info, set, errs
}
