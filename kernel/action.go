package kernel

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// Action is a proposed change to the world: what it does to the model
// (Effects), what it costs, and the metadata agents reason with. An Action
// is a plain value; the kernel copies what it keeps.
type Action struct {
	ID          string   // identifies the action in the catalogue (and emergency registration)
	Name        string   // short human-readable name
	Description string   // what it does
	Effects     []Effect // applied in sequence
	Cost        Cost     // exact, in thousandths of a unit

	Category      string
	Reversible    bool
	Precondition  string // the precondition in words (checks are kernel Preconditions)
	Postcondition string // the postcondition in words
	Tags          []string

	// Input is the call's input, usually its JSON arguments, as the bytes
	// the caller sent. A Session records it with the execution or
	// rejection — in full up to its input limit (WithInputLimit), beyond
	// only its SHA-256 digest and size (Record.InputDigest, InputSize) —
	// and the hash chain covers it. Any bytes are accepted: arguments that
	// canonical JSON refuses (integers beyond 2^53, duplicate keys, invalid
	// UTF-8) are recorded as they are, never refused. Action JSON
	// (MarshalJSON, DecodeAction) does not carry it.
	Input []byte
}

// validate reports every way the action is malformed, joined (errors.Is
// matches CheckWellFormed, ErrInvalidCost or value.ErrInvalidValue).
func (a Action) validate() error {
	var errs []error
	if a.ID == "" {
		errs = append(errs, fmt.Errorf("%w: empty id", CheckWellFormed))
	}
	for _, f := range []struct{ name, v string }{
		{"id", a.ID}, {"name", a.Name}, {"description", a.Description}, {"category", a.Category},
		{"precondition", a.Precondition}, {"postcondition", a.Postcondition},
	} {
		if !utf8.ValidString(f.v) {
			errs = append(errs, fmt.Errorf("%w: %s is not valid UTF-8", CheckWellFormed, f.name))
		}
	}
	for i, t := range a.Tags {
		if !utf8.ValidString(t) {
			errs = append(errs, fmt.Errorf("%w: tag %d is not valid UTF-8", CheckWellFormed, i))
		}
	}
	if a.Cost < 0 {
		errs = append(errs, fmt.Errorf("%w: negative cost %s", ErrInvalidCost, a.Cost))
	}
	for i, e := range a.Effects {
		if err := e.validate(); err != nil {
			errs = append(errs, within(err, "effect %d", i))
		}
	}
	return joinErrors(errs...)
}

// clone returns a copy that shares no slices with a (Values are immutable
// and may be shared).
func (a Action) clone() Action {
	a.Effects = slices.Clone(a.Effects)
	a.Tags = slices.Clone(a.Tags)
	a.Input = slices.Clone(a.Input)
	return a
}
