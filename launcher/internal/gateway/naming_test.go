package gateway

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestAssignNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	longServer := strings.Repeat("s", 40)
	tests := []struct {
		name   string
		items  []key
		always bool
		// want maps "server/tool" to the exposed name; "hashed:PREFIX"
		// wants a shortened name that starts with PREFIX.
		want map[string]string
	}{
		{name: "unique names kept",
			items: []key{{"a", "x"}, {"b", "y"}},
			want:  map[string]string{"a/x": "x", "b/y": "y"}},
		{name: "collision prefixes every holder",
			items: []key{{"a", "echo"}, {"b", "echo"}, {"c", "other"}, {"c", "echo"}},
			want:  map[string]string{"a/echo": "a__echo", "b/echo": "b__echo", "c/echo": "c__echo", "c/other": "other"}},
		{name: "always prefixes every tool",
			items:  []key{{"a", "x"}, {"b", "y"}},
			always: true,
			want:   map[string]string{"a/x": "a__x", "b/y": "b__y"}},
		{name: "names with dashes and digits are kept",
			items: []key{{"my-server", "get-2"}},
			want:  map[string]string{"my-server/get-2": "get-2"}},
		{name: "too long",
			items: []key{{"a", long}},
			want:  map[string]string{"a/" + long: "hashed:" + strings.Repeat("x", MaxName-hashLen)}},
		{name: "exactly 64 kept",
			items: []key{{"a", strings.Repeat("y", 64)}},
			want:  map[string]string{"a/" + strings.Repeat("y", 64): strings.Repeat("y", 64)}},
		{name: "prefixed name too long",
			items: []key{{longServer, "some_tool_with_a_long_name"}, {"b", "some_tool_with_a_long_name"}},
			want: map[string]string{
				longServer + "/some_tool_with_a_long_name": "hashed:" + (longServer + "__some_tool_with_a_long_name")[:MaxName-hashLen],
				"b/some_tool_with_a_long_name":             "b__some_tool_with_a_long_name"}},
		{name: "dots and spaces",
			items: []key{{"a", "get.file"}, {"a", "read me"}},
			want:  map[string]string{"a/get.file": "hashed:get_file", "a/read me": "hashed:read_me"}},
		{name: "non-ASCII: one underscore per character",
			items: []key{{"a", "résumé"}},
			want:  map[string]string{"a/résumé": "hashed:r_sum_"}},
		{name: "control characters and slashes",
			items: []key{{"a", "x/\x1b[31m"}},
			want:  map[string]string{"a/x/\x1b[31m": "hashed:x___31m"}},
		{name: "empty name",
			items: []key{{"a", ""}},
			want:  map[string]string{"a/": "hashed:"}},
		{name: "a bare name equal to a prefixed one: all hashed",
			items: []key{{"a", "x"}, {"b", "x"}, {"c", "a__x"}},
			want:  map[string]string{"a/x": "hashed:a__x", "b/x": "b__x", "c/a__x": "hashed:a__x"}},
		{name: "two odd names that shorten alike",
			items: []key{{"a", "x.y"}, {"a", "x y"}},
			want:  map[string]string{"a/x.y": "hashed:x_y", "a/x y": "hashed:x_y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := assignNames(tt.items, tt.always)
			checkNames(t, tt.items, got)
			for i, it := range tt.items {
				want := tt.want[it.server+"/"+it.name]
				if prefix, ok := strings.CutPrefix(want, "hashed:"); ok {
					if !strings.HasPrefix(got[i], prefix+"_") || len(got[i]) != len(prefix)+hashLen {
						t.Errorf("%s/%q: got %q, want %q, \"_\" and a hash", it.server, it.name, got[i], prefix)
					}
					continue
				}
				if got[i] != want {
					t.Errorf("%s/%q: got %q, want %q", it.server, it.name, got[i], want)
				}
			}
		})
	}
}

// checkNames checks what every assignment must be: valid, unique names.
func checkNames(t *testing.T, items []key, names []string) {
	t.Helper()
	if len(names) != len(items) {
		t.Fatalf("got %d names for %d items", len(names), len(items))
	}
	seen := map[string]key{}
	for i, n := range names {
		if !ValidName(n) {
			t.Errorf("%s/%q: %q is not a valid name", items[i].server, items[i].name, n)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("%q names both %v and %v", n, other, items[i])
		}
		seen[n] = items[i]
	}
}

// TestAssignNamesStable checks that a name depends on the workspace's
// items, not on their order, nor on a run: what a restart keeps.
func TestAssignNamesStable(t *testing.T) {
	items := []key{{"a", "x"}, {"b", "x"}, {"c", "a__x"}, {"a", strings.Repeat("z", 80)}, {"b", "q.r"}, {"c", "q_r"}, {"d", "only"}}
	byKey := func(items []key, names []string) map[key]string {
		m := map[key]string{}
		for i, it := range items {
			m[it] = names[i]
		}
		return m
	}
	want := byKey(items, assignNames(items, false))
	for i := range 20 {
		shuffled := slices.Clone(items)
		for j := range shuffled {
			k := (j*7 + i*3) % len(shuffled)
			shuffled[j], shuffled[k] = shuffled[k], shuffled[j]
		}
		got := byKey(shuffled, assignNames(shuffled, false))
		for k, w := range want {
			if got[k] != w {
				t.Errorf("order %v: %v is named %q, want %q", shuffled, k, got[k], w)
			}
		}
	}
}

func TestValidName(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"echo", true}, {"get-sum_2", true}, {"A", true}, {strings.Repeat("a", 64), true},
		{"", false}, {strings.Repeat("a", 65), false}, {"a.b", false}, {"a b", false}, {"é", false}, {"a/b", false},
	} {
		if got := ValidName(tt.name); got != tt.want {
			t.Errorf("ValidName(%q): got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzAssignNames checks that any names, however hostile, come out valid
// and unique.
func FuzzAssignNames(f *testing.F) {
	f.Add("a", "x", "b", "x", "c", "a__x", false)
	f.Add("s", strings.Repeat("é", 40), "s", "é", "t", "", true)
	f.Fuzz(func(t *testing.T, s1, n1, s2, n2, s3, n3 string, always bool) {
		var items []key
		seen := map[key]bool{}
		for _, it := range []key{{s1, n1}, {s2, n2}, {s3, n3}, {s1, n2}, {s2, fmt.Sprint(n1, n3)}} {
			if !seen[it] {
				seen[it] = true
				items = append(items, it)
			}
		}
		checkNames(t, items, assignNames(items, always))
	})
}
