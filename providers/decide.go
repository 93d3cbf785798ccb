package providers

// An EntryState is how a config file's entry relates to the manifest that
// merges into the file, by the file's ownership record.
type EntryState uint8

const (
	EntryHandWritten EntryState = iota // not recorded
	EntryOwned                         // recorded as the manifest's (or without owner), unchanged since
	EntryEdited                        // recorded as the manifest's (or without owner), changed since
	EntryForeign                       // recorded as another manifest's
)

// Conflict is the conflict of an entry named name, at line, in state s,
// that a merge would have to change; owner is its record's owner.
func (s EntryState) Conflict(name string, line int, owner string) Conflict {
	c := Conflict{Name: name, Reason: ReasonHandWritten, Line: line}
	switch s {
	case EntryEdited:
		c.Reason = ReasonEdited
	case EntryForeign:
		c.Reason, c.Owner = ReasonOtherManifest, owner
	}
	return c
}

// An Action is what a merge does with an entry that the file has.
type Action uint8

const (
	Keep       Action = iota // as it is, and as it is recorded, if at all
	KeepOurs                 // as it is, recorded as the manifest's: it is what the manifest writes
	Replace                  // written anew from the manifest, recorded as the manifest's
	Remove                   // gone, with its record
	KeepRecord               // as it is, with the record it has (another manifest's, or one without owner)
	Clash                    // a conflict: the merge fails, unless forced
)

// Decide says what a merge does with an entry of the file in state st:
// wanted, when the manifest writes an entry of its name, which is the
// file's own, content aside from layout, when same; legacy, when its
// record has no owner (an older mcpgen's), which only this manifest's
// entry of the same name replaces; force, emit --force. Every format's
// merge decides by it, so that ownership means the same in every file.
func Decide(st EntryState, wanted, same, legacy, force bool) Action {
	switch {
	case wanted && st == EntryOwned && same:
		return KeepOurs
	case wanted && (st == EntryOwned || force):
		return Replace
	case wanted:
		return Clash
	case legacy && st != EntryHandWritten:
		return KeepRecord
	case st == EntryOwned || st == EntryEdited && force:
		return Remove
	case st == EntryEdited:
		return Clash
	case st == EntryForeign:
		return KeepRecord
	}
	return Keep
}
