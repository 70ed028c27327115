package contracts

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/violation"
)

// fromTree stores a JSON value canon.Decode returned (map[string]any,
// []any, string, bool, nil, json.Number) in *dst, so that a document is
// parsed once: the schema validates the tree and the typed value is read
// from the same tree. It follows encoding/json's rules for the contract
// types — null leaves a value as it is and empties a pointer or slice; a
// JSON string, number or bool must meet a Go value of its kind; a number
// must fit the Go type (an integer field reads it by its value, as in
// canonical JSON: 1.0 is 1, 1.5 no integer); time.Time and
// json.RawMessage read their own JSON — except that object members match
// the json tag exactly, as the schema reads them. A value of the wrong
// shape is skipped and reading goes on, so *dst is decoded as far as it
// can be; the first such value is returned as a json.decode violation at
// its path, or nil when there is none.
func fromTree[T any](tree any, dst *T) *Violation {
	var d treeDecoder
	d.value(tree, reflect.ValueOf(dst).Elem())
	return d.first
}

// treeDecoder holds the first failure and the path to the value being
// read, as tokens, so that a pointer is only written for a failure.
type treeDecoder struct {
	first *Violation
	path  []token
}

// token is an object member name, or an array index when name is "".
type token struct {
	name  string
	index int
}

func (d *treeDecoder) fail(format string, args ...any) {
	if d.first != nil {
		return
	}
	p := ""
	for _, t := range d.path {
		if t.name == "" {
			p = violation.Index(p, t.index)
		} else {
			p = violation.Join(p, t.name)
		}
	}
	d.first = &Violation{Path: p, Rule: rule.Decode, Message: fmt.Sprintf(format, args...)}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func (d *treeDecoder) value(v any, dst reflect.Value) {
	if dst.Kind() == reflect.Pointer {
		if v == nil {
			dst.SetZero()
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		d.value(v, dst.Elem())
		return
	}
	if pt := reflect.PointerTo(dst.Type()); pt.Implements(unmarshalerType) {
		d.unmarshal(v, dst.Addr().Interface())
		return
	}
	if v == nil {
		switch dst.Kind() {
		case reflect.Slice, reflect.Map, reflect.Interface:
			dst.SetZero()
		}
		return // null leaves any other value as it is
	}
	switch x := v.(type) {
	case string:
		if dst.Kind() != reflect.String {
			d.mismatch("string", dst)
			return
		}
		dst.SetString(x)
	case bool:
		if dst.Kind() != reflect.Bool {
			d.mismatch("bool", dst)
			return
		}
		dst.SetBool(x)
	case json.Number:
		d.number(x, dst)
	case []any:
		d.array(x, dst)
	case map[string]any:
		d.object(x, dst)
	default:
		d.fail("cannot decode %T", v)
	}
}

func (d *treeDecoder) mismatch(jsonType string, dst reflect.Value) {
	d.fail("cannot decode a JSON %s into %s", jsonType, dst.Type())
}

// unmarshal lets a type that reads its own JSON read v: a string through
// UnmarshalText when the type has it (time.Time: the same strict RFC 3339
// reading as its UnmarshalJSON), anything else as canonical JSON text.
func (d *treeDecoder) unmarshal(v any, dst any) {
	var err error
	if s, ok := v.(string); ok {
		if tu, ok := dst.(encoding.TextUnmarshaler); ok {
			err = tu.UnmarshalText([]byte(s))
			if err != nil {
				d.fail("%v", err)
			}
			return
		}
	}
	b, err := canon.Marshal(v)
	if err == nil {
		err = dst.(json.Unmarshaler).UnmarshalJSON(b)
	}
	if err != nil {
		d.fail("%v", err)
	}
}

func (d *treeDecoder) number(n json.Number, dst reflect.Value) {
	s := string(n)
	switch dst.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(canonicalNumber(s), 10, 64)
		if err != nil || dst.OverflowInt(i) {
			d.fail("the number %s is not a %s", s, dst.Type())
			return
		}
		dst.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(canonicalNumber(s), 10, 64)
		if err != nil || dst.OverflowUint(u) {
			d.fail("the number %s is not a %s", s, dst.Type())
			return
		}
		dst.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, dst.Type().Bits())
		if err != nil || dst.OverflowFloat(f) {
			d.fail("the number %s is not a %s", s, dst.Type())
			return
		}
		dst.SetFloat(f)
	default:
		d.mismatch("number", dst)
	}
}

// canonicalNumber returns the RFC 8785 text of a number literal, which is
// how an integer field reads it: by its value, so 1.0 and 1e0 are 1 and
// 1.5 is no integer. Plain digits of at most 15 places are their own
// canonical text.
func canonicalNumber(s string) string {
	if len(s) <= 15 && (s == "0" || s[0] >= '1' && s[0] <= '9' && !strings.ContainsFunc(s, notDigit)) {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return string(canon.AppendFloat(nil, f))
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

func (d *treeDecoder) array(a []any, dst reflect.Value) {
	if dst.Kind() != reflect.Slice {
		d.mismatch("array", dst)
		return
	}
	s := reflect.MakeSlice(dst.Type(), len(a), len(a))
	for i, e := range a {
		d.path = append(d.path, token{index: i})
		d.value(e, s.Index(i))
		d.path = d.path[:len(d.path)-1]
	}
	dst.Set(s)
}

func (d *treeDecoder) object(o map[string]any, dst reflect.Value) {
	if dst.Kind() != reflect.Struct {
		d.mismatch("object", dst)
		return
	}
	for _, f := range jsonFields(dst.Type()) {
		if e, ok := o[f.name]; ok {
			d.path = append(d.path, token{name: f.name})
			d.value(e, dst.Field(f.index))
			d.path = d.path[:len(d.path)-1]
		}
	}
}

// jsonField is a struct field by the JSON member name it reads.
type jsonField struct {
	name  string
	index int
}

// fieldCache maps a struct type to its fields by JSON member name.
var fieldCache sync.Map // reflect.Type → []jsonField

// jsonFields returns the exported fields of struct type t by the name their
// json tag gives them (the field name when the tag gives none), sorted by
// name as canonical JSON orders members, so that the first value that does
// not fit is the one encoding/json meets first in the canonical text; a
// field tagged "-" has none.
func jsonFields(t reflect.Type) []jsonField {
	if m, ok := fieldCache.Load(t); ok {
		return m.([]jsonField)
	}
	m := make([]jsonField, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m = append(m, jsonField{name: name, index: i})
	}
	slices.SortFunc(m, func(a, b jsonField) int { return canon.CompareUTF16([]byte(a.name), []byte(b.name)) })
	fieldCache.Store(t, m)
	return m
}
