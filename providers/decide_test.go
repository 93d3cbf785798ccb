package providers

import "testing"

// TestDecide: the ownership policy every format's merge follows, row by
// row: what the manifest writes replaces only what it owns (or what
// --force lets it take), what it no longer writes goes only if it wrote it
// and no one edited it, and an entry without owner (an older mcpgen's)
// goes only when this manifest writes one of its name.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		st                          EntryState
		wanted, same, legacy, force bool
		want                        Action
	}{
		{EntryOwned, true, true, false, false, KeepOurs},
		{EntryOwned, true, false, false, false, Replace},
		{EntryEdited, true, false, false, false, Clash},
		{EntryEdited, true, false, false, true, Replace},
		{EntryHandWritten, true, false, false, false, Clash},
		{EntryHandWritten, true, false, false, true, Replace},
		{EntryForeign, true, false, false, false, Clash},
		{EntryForeign, true, true, false, true, Replace},
		{EntryOwned, false, false, false, false, Remove},
		{EntryOwned, false, false, true, false, KeepRecord},
		{EntryEdited, false, false, true, true, KeepRecord},
		{EntryEdited, false, false, false, false, Clash},
		{EntryEdited, false, false, false, true, Remove},
		{EntryForeign, false, false, false, true, KeepRecord},
		{EntryHandWritten, false, false, false, true, Keep},
		{EntryHandWritten, false, false, true, false, Keep},
	} {
		if got := Decide(c.st, c.wanted, c.same, c.legacy, c.force); got != c.want {
			t.Errorf("Decide(%d, wanted %v, same %v, legacy %v, force %v) = %d, want %d", c.st, c.wanted, c.same, c.legacy, c.force, got, c.want)
		}
	}
}

// TestEntryStateConflict: a conflict says why, and whose.
func TestEntryStateConflict(t *testing.T) {
	for st, want := range map[EntryState]Conflict{
		EntryHandWritten: {Name: "git", Line: 3, Reason: ReasonHandWritten},
		EntryEdited:      {Name: "git", Line: 3, Reason: ReasonEdited},
		EntryForeign:     {Name: "git", Line: 3, Reason: ReasonOtherManifest, Owner: "other.toml"},
	} {
		if got := st.Conflict("git", 3, "other.toml"); got != want {
			t.Errorf("%d: %+v, want %+v", st, got, want)
		}
	}
}
