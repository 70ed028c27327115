package value_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/kerneltest"
	"github.com/verity-go/verity/kernel/value"
)

// TestKindNames: each kind keeps its name, and the kind of each
// constructor's value is its own.
func TestKindNames(t *testing.T) {
	for _, c := range []struct {
		v    value.Value
		kind value.Kind
		name string
	}{
		{value.Null(), value.KindNull, "null"},
		{value.Bool(true), value.KindBool, "bool"},
		{value.Int(1), value.KindInt, "int"},
		{value.Float(1), value.KindFloat, "float"},
		{value.String("1"), value.KindString, "string"},
		{value.List(), value.KindList, "list"},
		{value.Object(nil), value.KindObject, "object"},
	} {
		assert.Equal(t, c.kind, c.v.Kind(), c.name)
		assert.Equal(t, c.name, c.kind.String())
	}
}

// TestOfTakesValues: Of accepts this package's Value, []Value and
// map[string]Value, also nested in Go lists and maps, and checks them as
// it checks Go values.
func TestOfTakesValues(t *testing.T) {
	v, err := value.Of(map[string]any{
		"v":    value.Int(1),
		"list": []value.Value{value.String("a"), value.Float(0.5)},
		"obj":  map[string]value.Value{"k": value.Bool(true)},
		"deep": []any{value.Null(), map[string]any{"x": value.Int(2)}},
	})
	require.NoError(t, err)
	assert.Equal(t, `{"deep":[null,{"x":2}],"list":["a",0.5],"obj":{"k":true},"v":1}`, v.String())

	for _, bad := range []any{value.String("\xff"), []value.Value{value.Float(2), value.String("\xff")}, map[string]value.Value{"\xff": value.Null()}, struct{}{}} {
		_, err := value.Of(bad)
		assert.True(t, errors.Is(err, value.ErrInvalidValue), "%#v: %v", bad, err)
	}
}

// TestValuesShareNothing: Items and Fields hand out copies, and List and
// Object copy what they are given.
func TestValuesShareNothing(t *testing.T) {
	items := []value.Value{value.Int(1), value.Int(2)}
	l := value.List(items...)
	items[0] = value.Int(9)
	got := l.Items()
	got[1] = value.Int(9)
	assert.Equal(t, "[1,2]", l.String())

	fields := map[string]value.Value{"a": value.Int(1)}
	o := value.Object(fields)
	fields["a"] = value.Int(9)
	o.Fields()["a"] = value.Int(9)
	assert.Equal(t, `{"a":1}`, o.String())
}

// TestDecodeReadsWhatMarshalJSONWrites: every value reads back equal
// from its JSON form.
func TestDecodeReadsWhatMarshalJSONWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := kerneltest.Value(3).Draw(t, "value")
		b, err := v.MarshalJSON()
		if err != nil {
			return // a string that is not UTF-8
		}
		back, err := value.Decode(b)
		if err != nil || !back.Equal(v) {
			t.Fatalf("%s read back as %v (%v)", b, back, err)
		}
		if gi, gf := back.Items(), v.Items(); len(gi) != len(gf) {
			t.Fatalf("items %v, want %v", gi, gf)
		}
	})
}
