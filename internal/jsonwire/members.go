package jsonwire

// A Member is one member of a JSON object, as written.
type Member struct {
	Key     string // decoded
	RawKey  []byte // as written, quotes and escapes included
	Value   []byte // as written
	KeyAt   int    // offset of RawKey in the scanned data
	ValueAt int    // offset of Value in the scanned data
}

// Members returns the members of the object that starts at data[at] (after
// any white space), in order and duplicates included, with their keys and
// values as written. It checks the syntax of the object, not of what follows
// it; a *SyntaxError's offset is in data.
func Members(data []byte, at int) ([]Member, error) {
	s := Scanner{Data: data, Pos: at}
	if s.Peek() != '{' {
		return nil, s.Unexpected("looking for an object")
	}
	s.Pos++
	if s.Peek() == '}' {
		return nil, nil
	}
	ms := make([]Member, 0, 4) // most objects of a message have few: one allocation
	for {
		if s.Peek() != '"' {
			return nil, s.Unexpected("looking for an object key")
		}
		keyAt := s.Pos
		escaped, err := s.SkipString()
		if err != nil {
			return nil, err
		}
		rawKey := data[keyAt:s.Pos]
		if s.Peek() != ':' {
			return nil, s.Unexpected("after object key")
		}
		s.Pos++
		s.SkipSpace()
		valueAt := s.Pos
		if err := s.SkipValue(1); err != nil {
			return nil, err
		}
		ms = append(ms, Member{
			Key:     Unquote(rawKey, escaped),
			RawKey:  rawKey,
			Value:   data[valueAt:s.Pos],
			KeyAt:   keyAt,
			ValueAt: valueAt,
		})
		switch s.Peek() {
		case ',':
			s.Pos++
		case '}':
			return ms, nil
		default:
			return nil, s.Unexpected("after object value")
		}
	}
}
