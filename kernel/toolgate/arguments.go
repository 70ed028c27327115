package toolgate

import (
	"encoding/json"
	"strings"

	"github.com/verity-go/verity/internal/canon"
)

// readArguments reads a call's arguments as args.value needs them: the
// tree canon.Decode makes (map[string]any, []any, string, bool, nil and
// json.Number), from one strict JSON value in which no object has two
// member names equal under Unicode case folding (caseFolded).
//
// It reads them in one pass of canon's Scanner, which applies strict
// JSON's rules as canon.Decode does, comparing each object's names as it
// goes and building the tree at once. Arguments that pass are never read
// again. Arguments it refuses are read again by canon.Decode and
// caseFolded, so that a refusal says what it always said; were they to
// accept what the one pass refused, their reading stands.
func readArguments(raw []byte) (any, error) {
	if v, ok := scanArguments(raw); ok {
		return v, nil
	}
	v, err := canon.Decode(raw)
	if err == nil {
		err = caseFolded(v)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// scanArguments is readArguments' one pass: the tree, or false for
// arguments strict JSON refuses or with two names of one object equal
// under case folding (a duplicate among them).
func scanArguments(raw []byte) (any, bool) {
	var r argumentReader
	r.sc.Reset(raw, 0, 0)
	v, ok := r.value()
	if !ok || r.sc.Finish() != nil {
		return nil, false
	}
	return v, true
}

// argumentReader builds a canon.Decode tree from its Scanner's tokens.
type argumentReader struct {
	sc    canon.Scanner
	names []string // the names of the open objects, a stack they share
}

func (r *argumentReader) value() (any, bool) {
	switch c := r.sc.Peek(); {
	case c == '{':
		return r.object()
	case c == '[':
		return r.array()
	case c == '"':
		s, _, err := r.sc.ReadString()
		return string(s), err == nil
	case c == 't':
		return true, r.sc.ReadLiteral("true") == nil
	case c == 'f':
		return false, r.sc.ReadLiteral("false") == nil
	case c == 'n':
		return nil, r.sc.ReadLiteral("null") == nil
	case c == '-' || c >= '0' && c <= '9':
		lit, _, err := r.sc.ReadNumber()
		return json.Number(lit), err == nil
	}
	return nil, false
}

func (r *argumentReader) array() (any, bool) {
	xs := []any{}
	empty, err := r.sc.Open()
	if err != nil {
		return nil, false
	}
	if empty {
		return xs, true
	}
	for {
		v, ok := r.value()
		if !ok {
			return nil, false
		}
		xs = append(xs, v)
		more, err := r.sc.Next(']')
		if err != nil {
			return nil, false
		}
		if !more {
			return xs, true
		}
	}
}

// object reads an object, refusing a name equal under case folding to
// one read before in it (strings.EqualFold, as caseFolded; an equal name
// is a duplicate): pair by pair up to smallObject names, then through a
// set of folded names.
func (r *argumentReader) object() (any, bool) {
	m := map[string]any{}
	empty, err := r.sc.Open()
	if err != nil {
		return nil, false
	}
	if empty {
		return m, true
	}
	base := len(r.names)
	defer func() { r.names = r.names[:base] }()
	var folded map[string]struct{}
	for {
		key, _, _, err := r.sc.Key()
		if err != nil {
			return nil, false
		}
		name := string(key)
		if folded == nil {
			for _, prev := range r.names[base:] {
				if strings.EqualFold(prev, name) {
					return nil, false
				}
			}
			if r.names = append(r.names, name); len(r.names)-base > smallObject {
				folded = make(map[string]struct{}, 2*smallObject)
				for _, n := range r.names[base:] {
					folded[foldName(n)] = struct{}{}
				}
			}
		} else {
			f := foldName(name)
			if _, dup := folded[f]; dup {
				return nil, false
			}
			folded[f] = struct{}{}
		}
		v, ok := r.value()
		if !ok {
			return nil, false
		}
		m[name] = v
		more, err := r.sc.Next('}')
		if err != nil {
			return nil, false
		}
		if !more {
			return m, true
		}
	}
}
