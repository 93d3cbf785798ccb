package lazyregexp

import (
	"slices"
	"sync"
	"testing"
)

// A Regexp outside tests compiles on its first use, once, whatever the
// number of goroutines that use it first.
func TestCompiledOnFirstUse(t *testing.T) {
	r := &Regexp{str: `^[a-z]{1,8}$`} // as New makes it outside tests
	if got := r.String(); got != `^[a-z]{1,8}$` {
		t.Errorf("String() = %q, want the source", got)
	}
	if r.rx != nil {
		t.Fatal("compiled before its first use")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !r.MatchString("abc") || r.MatchString("ABC") {
				t.Error("MatchString disagrees with the pattern")
			}
		})
	}
	wg.Wait()
	if r.rx == nil {
		t.Fatal("not compiled after its use")
	}
}

// In a test binary, New compiles at once: a bad pattern fails its
// package's tests at init, not at a first use that no test may make.
func TestNewCompilesInTests(t *testing.T) {
	if !inTest {
		t.Fatal("inTest is false in a test binary")
	}
	if r := New(`a+`); r.rx == nil {
		t.Error("New did not compile in a test binary")
	}
	defer func() {
		if recover() == nil {
			t.Error("New of a bad pattern did not panic")
		}
	}()
	New(`a(`)
}

func TestMethods(t *testing.T) {
	r := &Regexp{str: `([a-z])([A-Z])`}
	if got, want := r.ReplaceAllString("apiKey", "${1}_${2}"), "api_Key"; got != want {
		t.Errorf("ReplaceAllString = %q, want %q", got, want)
	}
	if got, want := r.FindSubmatch([]byte("xaBy")), [][]byte{[]byte("aB"), []byte("a"), []byte("B")}; !slices.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("FindSubmatch = %q, want %q", got, want)
	}
	split := &Regexp{str: `[^A-Za-z0-9]+`}
	if got, want := split.Split("X-Api--Key", -1), []string{"X", "Api", "Key"}; !slices.Equal(got, want) {
		t.Errorf("Split = %q, want %q", got, want)
	}
}
