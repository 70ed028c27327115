package kernel

import (
	"fmt"
	"github.com/verity-go/verity/internal/jsonvalue"
	"github.com/verity-go/verity/kernel/value"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-go/verity/internal/hamt"
)

// Op is an effect operation.
type Op uint8

// The effect operations. The zero Op is invalid so that a forgotten field
// is caught by validation.
const (
	OpSet       Op = iota + 1 // variable := value (creates it if absent)
	OpIncrement               // variable += value (numeric)
	OpDecrement               // variable -= value (numeric)
	OpMultiply                // variable *= value (numeric)
	OpAppend                  // list variable gets value appended
	OpRemove                  // first item equal to value is removed from a list variable
	OpDelete                  // variable becomes absent (no-op if absent)
	OpCount                   // variable += value, starting from Initial when absent
)

var opNames = [...]string{"", "set", "increment", "decrement", "multiply", "append", "remove", "delete", "count"}

// String returns the operation's name as written in JSON ("increment").
func (o Op) String() string {
	if o >= OpSet && o <= OpCount {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// parseOp returns the Op named s.
func parseOp(s string) (Op, error) {
	for i := OpSet; i <= OpCount; i++ {
		if opNames[i] == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown effect operation %q", CheckWellFormed, s)
}

// Effect is one declared change to one variable. Effects of an action apply
// in sequence, each to the state the previous one produced.
//
// Arithmetic rule (increment, decrement, multiply): the variable keeps its
// type. An int variable takes an int operand with exact int64 arithmetic;
// overflow is a rejection (ErrOverflow); a float operand is a rejection
// (ErrTypeMismatch) because it would silently turn the integer into a
// float. A float variable takes a float operand, or an int operand of
// magnitude at most 2^53 (converted exactly); a non-finite result is a
// rejection (ErrOverflow). Any other variable (absent, null, string, ...)
// is a rejection, except for OpCount, which needs no declared variable:
// an absent one counts from Initial (Initial + Value, by the same rule),
// and its inverse deletes it again, so rollback leaves it absent (T7).
type Effect struct {
	Op      Op
	Key     string
	Value   value.Value // the operand; null for OpDelete
	Initial value.Value // OpCount only: where an absent variable starts (a number)
}

// Set returns the effect key := v.
func Set(key string, v value.Value) Effect { return Effect{Op: OpSet, Key: key, Value: v} }

// Increment returns the effect key += v.
func Increment(key string, v value.Value) Effect { return Effect{Op: OpIncrement, Key: key, Value: v} }

// Decrement returns the effect key -= v.
func Decrement(key string, v value.Value) Effect { return Effect{Op: OpDecrement, Key: key, Value: v} }

// Multiply returns the effect key *= v.
func Multiply(key string, v value.Value) Effect { return Effect{Op: OpMultiply, Key: key, Value: v} }

// Append returns the effect that appends v to the list key.
func Append(key string, v value.Value) Effect { return Effect{Op: OpAppend, Key: key, Value: v} }

// Remove returns the effect that removes the first item equal to v from
// the list key (a rejection if there is none).
func Remove(key string, v value.Value) Effect { return Effect{Op: OpRemove, Key: key, Value: v} }

// Delete returns the effect that makes key absent.
func Delete(key string) Effect { return Effect{Op: OpDelete, Key: key} }

// Count returns the effect key += by, where an absent key starts from
// initial: a counter that needs no declaration (one per tool, say, for an
// open-ended list of tools). Count("calls/search", Int(1), Int(0)) counts
// calls; Count("quota", Int(-1), Int(10)) counts a quota down from 10.
// Rolling it back where the key was absent makes it absent again.
func Count(key string, by, initial value.Value) Effect {
	return Effect{Op: OpCount, Key: key, Value: by, Initial: initial}
}

// String returns a short human-readable form ("increment x 1").
func (e Effect) String() string {
	if e.Op == OpDelete {
		return "delete " + strconv.Quote(e.Key)
	}
	if e.Op == OpCount {
		return "count " + strconv.Quote(e.Key) + " " + e.Value.String() + " from " + e.Initial.String()
	}
	return e.Op.String() + " " + strconv.Quote(e.Key) + " " + e.Value.String()
}

// validate checks the effect's shape (not whether it fits a state).
func (e Effect) validate() error {
	if e.Op < OpSet || e.Op > OpCount {
		return fmt.Errorf("%w: unknown effect operation %d", CheckWellFormed, e.Op)
	}
	if err := checkKey(e.Key); err != nil {
		return err
	}
	if err := jv(e.Value).Validate(0); err != nil {
		return err
	}
	if err := jv(e.Initial).Validate(0); err != nil {
		return err
	}
	if e.Op != OpCount && e.Initial.Kind() != value.KindNull {
		return fmt.Errorf("%w: only count takes an initial value", CheckWellFormed)
	}
	switch e.Op {
	case OpIncrement, OpDecrement, OpMultiply, OpCount:
		if k := e.Value.Kind(); k != value.KindInt && k != value.KindFloat {
			return fmt.Errorf("%w: %s needs a numeric operand, got %s", CheckWellFormed, e.Op, k)
		}
		if k := e.Initial.Kind(); e.Op == OpCount && k != value.KindInt && k != value.KindFloat {
			return fmt.Errorf("%w: count needs a numeric initial value, got %s", CheckWellFormed, k)
		}
	case OpDelete:
		if e.Value.Kind() != value.KindNull {
			return fmt.Errorf("%w: delete takes no operand", CheckWellFormed)
		}
	}
	return nil
}

// ApplyEffects returns the state after applying effects in sequence, or an
// error wrapping CheckEffects (an *EffectError) or CheckWellFormed. s is
// never changed.
func ApplyEffects(s State, effects []Effect) (State, error) {
	b := newBuilder(s)
	b.grow(len(effects))
	for i, e := range effects {
		if err := e.validate(); err != nil {
			return s, within(err, "effect %d", i)
		}
		if _, err := b.apply(i, e); err != nil {
			return s, err
		}
	}
	return b.state(), nil
}

// InverseEffects computes the inverse of effects from the state they start
// from (mechanism 1 of the specification, "algebraic inverse"): applying
// the result to ApplyEffects(s, effects) gives back s exactly. An integer
// increment inverts to a decrement and vice versa (exact, since overflow
// is rejected); every other change inverts to a set of the prior value, or
// a delete where the variable was absent; a delete of an absent variable
// needs no inverse.
func InverseEffects(s State, effects []Effect) ([]Effect, error) {
	b := newBuilder(s)
	inv := make([]Effect, 0, len(effects))
	for i, e := range effects {
		if err := e.validate(); err != nil {
			return nil, within(err, "effect %d", i)
		}
		ie, err := b.apply(i, e)
		if err != nil {
			return nil, err
		}
		if ie.Op != 0 {
			inv = append(inv, ie)
		}
	}
	slices.Reverse(inv)
	return inv, nil
}

// DiffInverse computes the effects that turn after back into before from
// the two states alone (mechanism 2 of the specification, "state diff"):
// a set of the prior value for each changed or removed variable, a delete
// for each added one, in key order. It is correct whatever effects led
// from before to after, and costs time proportional to the changed paths
// of the persistent map, not to the size of the states.
func DiffInverse(before, after State) []Effect {
	var inv []Effect
	hamt.Diff(before.stateMap(), after.stateMap(), func(key string, a, b *stateVal) {
		switch {
		case a == nil:
			inv = append(inv, Delete(key))
		case b == nil || !a.v.Equal(b.v):
			inv = append(inv, Set(key, a.v))
		}
	})
	slices.SortFunc(inv, func(x, y Effect) int { return strings.Compare(x.Key, y.Key) })
	return inv
}

// apply applies one validated effect and returns its inverse (zero Op if
// none is needed).
func (b *builder) apply(i int, e Effect) (Effect, error) {
	old, had := b.get(e.Key)
	restore := func() Effect {
		if had {
			return Set(e.Key, old)
		}
		return Delete(e.Key)
	}
	fail := func(err error, format string, args ...any) (Effect, error) {
		return Effect{}, &EffectError{Index: i, Op: e.Op, Key: e.Key, Reason: fmt.Sprintf(format, args...), Err: err}
	}
	switch e.Op {
	case OpSet:
		b.set(e.Key, e.Value)
		return restore(), nil
	case OpDelete:
		if !had {
			return Effect{}, nil
		}
		b.del(e.Key)
		return restore(), nil
	case OpCount:
		base := old
		if !had {
			base = e.Initial
		}
		nv, err := arith(OpCount, base, e.Value)
		if err != nil {
			return fail(err.err, "%s", err.msg)
		}
		b.set(e.Key, nv)
		if had && old.Kind() == value.KindInt {
			return Effect{Op: OpDecrement, Key: e.Key, Value: e.Value}, nil
		}
		return restore(), nil
	case OpIncrement, OpDecrement, OpMultiply:
		if !had {
			return fail(ErrMissingVariable, "%s of an absent variable", e.Op)
		}
		nv, err := arith(e.Op, old, e.Value)
		if err != nil {
			return fail(err.err, "%s", err.msg)
		}
		b.set(e.Key, nv)
		if old.Kind() == value.KindInt && e.Op != OpMultiply {
			back := OpDecrement
			if e.Op == OpDecrement {
				back = OpIncrement
			}
			return Effect{Op: back, Key: e.Key, Value: e.Value}, nil
		}
		return restore(), nil
	case OpAppend, OpRemove:
		if !had {
			return fail(ErrMissingVariable, "%s on an absent variable", e.Op)
		}
		if old.Kind() != value.KindList {
			return fail(ErrTypeMismatch, "%s needs a list, found %s", e.Op, old.Kind())
		}
		list := jv(old).Elems()
		var items []jsonvalue.Value
		if e.Op == OpAppend {
			items = make([]jsonvalue.Value, len(list)+1)
			copy(items, list)
			items[len(list)] = jv(e.Value)
		} else {
			at := slices.IndexFunc(list, jv(e.Value).Equal)
			if at < 0 {
				return fail(ErrNotInList, "%s is not in the list", e.Value.String())
			}
			items = make([]jsonvalue.Value, 0, len(list)-1)
			items = append(items, list[:at]...)
			items = append(items, list[at+1:]...)
		}
		b.set(e.Key, value.Value(jsonvalue.NewList(items)))
		return restore(), nil
	}
	return fail(CheckWellFormed, "unknown operation")
}

type arithError struct {
	err error
	msg string
}

// arith implements the arithmetic rule documented on Effect.
func arith(op Op, x, y value.Value) (value.Value, *arithError) {
	switch x.Kind() {
	case value.KindInt:
		if y.Kind() != value.KindInt {
			return value.Value{}, &arithError{ErrTypeMismatch, fmt.Sprintf("%s of an int variable by a %s (would change its type)", op, y.Kind())}
		}
		a, _ := x.AsInt()
		c, _ := y.AsInt()
		var r int64
		var ok bool
		switch op {
		case OpIncrement, OpCount:
			r, ok = addInt(a, c)
		case OpDecrement:
			r, ok = subInt(a, c)
		default:
			r, ok = mulInt(a, c)
		}
		if !ok {
			return value.Value{}, &arithError{ErrOverflow, fmt.Sprintf("%s %d by %d overflows int64", op, a, c)}
		}
		return value.Int(r), nil
	case value.KindFloat:
		a, _ := x.AsFloat()
		var c float64
		switch y.Kind() {
		case value.KindFloat:
			c, _ = y.AsFloat()
		case value.KindInt:
			i, _ := y.AsInt()
			if i > 1<<53 || i < -(1<<53) {
				return value.Value{}, &arithError{ErrTypeMismatch, fmt.Sprintf("int operand %d is not exact as a float", i)}
			}
			c = float64(i)
		default:
			return value.Value{}, &arithError{ErrTypeMismatch, fmt.Sprintf("%s by a %s", op, y.Kind())}
		}
		var r float64
		switch op {
		case OpIncrement, OpCount:
			r = a + c
		case OpDecrement:
			r = a - c
		default:
			r = a * c
		}
		if math.IsInf(r, 0) || math.IsNaN(r) {
			return value.Value{}, &arithError{ErrOverflow, fmt.Sprintf("%s gives a non-finite float", op)}
		}
		return value.Float(r), nil
	default:
		return value.Value{}, &arithError{ErrTypeMismatch, fmt.Sprintf("%s needs a number, found %s", op, x.Kind())}
	}
}

func addInt(a, b int64) (int64, bool) {
	r := a + b
	return r, (b >= 0) == (r >= a)
}

func subInt(a, b int64) (int64, bool) {
	r := a - b
	return r, (b >= 0) == (r <= a)
}

func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	r := a * b
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) || r/b != a {
		return 0, false
	}
	return r, true
}
