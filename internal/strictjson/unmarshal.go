package strictjson

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/violation"
)

// Unmarshaler is implemented by a type (on its pointer) that reads its own
// value from a Decoder positioned at it. A non-nil error is recorded as a
// problem with that value (with the rule Errorf or Fail gave it, "value"
// otherwise) and the value is skipped; reading goes on.
type Unmarshaler interface {
	UnmarshalStrict(d *Decoder) error
}

// Options change how Unmarshal reads.
type Options struct {
	// AllowUnknown skips object members no struct field names (checked
	// as strictly as any other value) instead of reporting them.
	AllowUnknown bool
	// MaxDepth bounds the nesting of arrays and objects; 0 means
	// canon.MaxDepth (512).
	MaxDepth int
	// Context is handed to every Unmarshaler (Decoder.Context): what the
	// reading is for, when a type reads differently in one use.
	Context any
}

// Unmarshal reads the one JSON text data into v (a non-nil pointer)
// strictly, with the default Options.
func Unmarshal(data []byte, v any) error { return Options{}.Unmarshal(data, v) }

var decoderPool = sync.Pool{New: func() any { return new(Decoder) }}

// Unmarshal reads the one JSON text data into v (a non-nil pointer). It
// returns nil or an *Error with every problem found.
func (o Options) Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: Unmarshal needs a non-nil pointer, not %T", v)
	}
	d := decoderPool.Get().(*Decoder)
	*d = Decoder{lx: d.lx, allowUnknown: o.AllowUnknown, context: o.Context,
		path: d.path[:0], problems: d.problems[:0], keys: d.keys[:0]}
	d.lx.Reset(data, 0, o.MaxDepth)
	err := d.decode(rv.Elem())
	if err == nil {
		err = d.syntax(d.lx.Finish())
	}
	if err != nil {
		// A text that is not strict JSON is refused as a whole: what was
		// found before in it says nothing.
		d.problems = d.problems[:0]
		d.record(err)
	}
	var out error
	if len(d.problems) > 0 {
		out = &Error{problems: append([]problem(nil), d.problems...)}
	}
	if cap(d.problems) <= 1024 {
		d.lx.Reset(nil, 0, 0)
		d.context = nil
		clear(d.path[:cap(d.path)])
		clear(d.keys[:cap(d.keys)])
		clear(d.problems[:cap(d.problems)])
		decoderPool.Put(d)
	}
	return out
}

// Error is every problem Unmarshal found, in the order it found them.
type Error struct {
	problems []problem
}

// Error returns the first problem as "pointer: rule: message", and how
// many more there are.
func (e *Error) Error() string {
	s := e.Violations()[0].String()
	if n := len(e.problems) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

// Violations returns the problems as violations: an RFC 6901 pointer, a
// rule (violation.RuleSyntax, RuleDuplicateKey, RuleUnknownField,
// RuleType, RuleRequired, or the one an Unmarshaler named) and a message.
func (e *Error) Violations() []violation.Violation {
	vs := make([]violation.Violation, len(e.problems))
	for i, p := range e.problems {
		vs[i] = violation.Violation{Path: p.path, Rule: p.rule, Message: p.msg}
	}
	return vs
}

// Unwrap returns the causes: a canon sentinel for a text that is not
// strict JSON, ErrType, ErrMissing, ErrUnknown, or an Unmarshaler's error.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, p := range e.problems {
		if p.cause != nil {
			errs = append(errs, p.cause)
		}
	}
	return errs
}

// errRecorded is returned by Decode when the problems it found are
// already recorded.
var errRecorded = errors.New("strictjson: problems recorded")

// Decode reads the next value into v (a non-nil pointer) as Unmarshal
// does. Problems within it are recorded; it returns a non-nil error when
// there were any, which an Unmarshaler returns as it is.
func (d *Decoder) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: Decode needs a non-nil pointer, not %T", v)
	}
	n := len(d.problems)
	if err := d.decode(rv.Elem()); err != nil {
		return err
	}
	if len(d.problems) > n {
		return errRecorded
	}
	return nil
}

func (d *Decoder) decode(v reflect.Value) error {
	p, err := planOf(v.Type())
	if err != nil {
		return err
	}
	return d.value(p, v)
}

type planKind uint8

const (
	kHook planKind = iota
	kJSONUnmarshaler
	kText
	kNumber
	kRaw
	kBool
	kString
	kInt
	kUint
	kFloat
	kSlice
	kMap
	kPointer
	kStruct
	kAny
)

// plan is how to read one Go type.
type plan struct {
	kind   planKind
	t      reflect.Type
	elem   *plan // slice, map and pointer elements
	fields []field
	err    error
}

type field struct {
	name     string
	index    []int
	required bool
	plan     *plan
}

var (
	plans            sync.Map // reflect.Type → *plan
	plansMu          sync.Mutex
	hookType         = reflect.TypeFor[Unmarshaler]()
	jsonUnmarshaler  = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler  = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType       = reflect.TypeFor[json.Number]()
	rawType          = reflect.TypeFor[json.RawMessage]()
	emptyInterfaceTy = reflect.TypeFor[any]()
)

func planOf(t reflect.Type) (*plan, error) {
	if p, ok := plans.Load(t); ok {
		p := p.(*plan)
		return p, p.err
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	building := map[reflect.Type]*plan{}
	p := build(t, building)
	for t, bp := range building {
		plans.Store(t, bp)
	}
	return p, p.err
}

func build(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &plan{t: t}
	building[t] = p
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(hookType):
		p.kind = kHook
		return p
	case t == numberType:
		p.kind = kNumber
		return p
	case t == rawType:
		p.kind = kRaw
		return p
	case pt.Implements(jsonUnmarshaler):
		p.kind = kJSONUnmarshaler
		return p
	case pt.Implements(textUnmarshaler):
		p.kind = kText
		return p
	}
	switch t.Kind() {
	case reflect.Bool:
		p.kind = kBool
	case reflect.String:
		p.kind = kString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind = kInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.kind = kUint
	case reflect.Float32, reflect.Float64:
		p.kind = kFloat
	case reflect.Slice:
		p.kind = kSlice
		p.elem = build(t.Elem(), building)
		p.err = p.elem.err
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			p.err = fmt.Errorf("strictjson: unsupported map key type %v", t.Key())
		}
		p.kind = kMap
		p.elem = build(t.Elem(), building)
		if p.err == nil {
			p.err = p.elem.err
		}
	case reflect.Pointer:
		p.kind = kPointer
		p.elem = build(t.Elem(), building)
		p.err = p.elem.err
	case reflect.Interface:
		if t != emptyInterfaceTy {
			p.err = fmt.Errorf("strictjson: unsupported interface type %v", t)
		}
		p.kind = kAny
	case reflect.Struct:
		p.kind = kStruct
		p.err = p.addFields(t, nil, building)
		if len(p.fields) > 64 && p.err == nil {
			p.err = fmt.Errorf("strictjson: %v has more than 64 members", t)
		}
	default:
		p.err = fmt.Errorf("strictjson: unsupported type %v", t)
	}
	return p
}

// addFields adds the members of struct t (fields at index prefix),
// flattening untagged embedded structs as encoding/json does.
func (p *plan) addFields(t reflect.Type, prefix []int, building map[reflect.Type]*plan) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, hasTag := sf.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		index := append(append([]int(nil), prefix...), i)
		if sf.Anonymous && !hasTag && sf.Type.Kind() == reflect.Struct {
			if err := p.addFields(sf.Type, index, building); err != nil {
				return err
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		required := true
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty", "omitzero", "optional":
				required = false
			case "", "required":
			default:
				return fmt.Errorf("strictjson: %v.%s: unsupported tag option %q", t, sf.Name, o)
			}
		}
		for _, f := range p.fields {
			if f.name == name {
				return fmt.Errorf("strictjson: %v: member %q twice", t, name)
			}
		}
		fp := build(sf.Type, building)
		if fp.err != nil {
			return fp.err
		}
		p.fields = append(p.fields, field{name: name, index: index, required: required, plan: fp})
	}
	return nil
}

// value reads the next value into v per p. Problems are recorded; only a
// fatal one (the text is not strict JSON) is returned.
func (d *Decoder) value(p *plan, v reflect.Value) error {
	k := d.Peek()
	if k == Invalid {
		return d.Skip()
	}
	if k == Null {
		switch p.kind {
		case kPointer, kAny:
			v.SetZero()
			return d.literal("null")
		case kRaw:
			v.SetBytes([]byte("null"))
			return d.literal("null")
		case kHook, kJSONUnmarshaler:
		default:
			return d.mismatch(p)
		}
	}
	switch p.kind {
	case kHook:
		start, depth, path, keys := d.lx.Offset(), d.lx.Depth(), len(d.path), len(d.keys)
		err := v.Addr().Interface().(Unmarshaler).UnmarshalStrict(d)
		if err == nil {
			return nil
		}
		if isFatal(err) {
			return err
		}
		d.lx.SetDepth(depth)
		d.path, d.keys = d.path[:path], d.keys[:keys]
		if err != errRecorded {
			d.record(err)
		}
		d.lx.SetOffset(start)
		return d.Skip()
	case kJSONUnmarshaler:
		raw, err := d.Raw()
		if err != nil {
			return err
		}
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			d.record(d.Fail("value", err))
		}
		return nil
	case kText:
		if k != String {
			return d.mismatch(p)
		}
		s, err := d.str()
		if err != nil {
			return err
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(s); err != nil {
			d.record(d.Fail("value", err))
		}
		return nil
	case kNumber:
		if k != Number {
			return d.mismatch(p)
		}
		lit, _, err := d.number()
		if err != nil {
			return err
		}
		v.SetString(string(lit))
		return nil
	case kRaw:
		raw, err := d.Raw()
		if err != nil {
			return err
		}
		v.SetBytes(append([]byte(nil), raw...))
		return nil
	case kBool:
		if k != Bool {
			return d.mismatch(p)
		}
		b, err := d.ReadBool()
		v.SetBool(b)
		return err
	case kString:
		if k != String {
			return d.mismatch(p)
		}
		s, err := d.str()
		if err != nil {
			return err
		}
		v.SetString(string(s))
		return nil
	case kInt, kUint, kFloat:
		if k != Number {
			return d.mismatch(p)
		}
		return d.numberInto(p, v)
	case kSlice:
		if k != Array {
			return d.mismatch(p)
		}
		if v.IsNil() {
			v.Set(reflect.MakeSlice(p.t, 0, 0))
		} else {
			v.SetLen(0)
		}
		return d.Array(func(i int) error {
			v.Grow(1)
			v.SetLen(i + 1)
			return d.value(p.elem, v.Index(i))
		})
	case kMap:
		if k != Object {
			return d.mismatch(p)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(p.t))
		}
		elem := reflect.New(p.elem.t).Elem()
		return d.Object(func(key string) error {
			elem.SetZero()
			if err := d.value(p.elem, elem); err != nil {
				return err
			}
			v.SetMapIndex(reflect.ValueOf(key).Convert(p.t.Key()), elem)
			return nil
		})
	case kPointer:
		if v.IsNil() {
			v.Set(reflect.New(p.elem.t))
		}
		return d.value(p.elem, v.Elem())
	case kStruct:
		if k != Object {
			return d.mismatch(p)
		}
		return d.structValue(p, v)
	case kAny:
		x, err := d.any()
		if err != nil {
			return err
		}
		if x == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	}
	return fmt.Errorf("strictjson: no plan for %v", p.t)
}

// mismatch records that the next value has the wrong type for p, and
// skips it.
func (d *Decoder) mismatch(p *plan) error {
	d.record(d.typeError(want(p)))
	return d.Skip()
}

func want(p *plan) string {
	switch p.kind {
	case kText, kString:
		return "a string"
	case kNumber, kFloat:
		return "a number"
	case kInt, kUint:
		return "an integer"
	case kBool:
		return "a boolean"
	case kSlice:
		return "an array"
	case kMap, kStruct:
		return "an object"
	case kPointer:
		return want(p.elem)
	}
	return "a value"
}

func (d *Decoder) numberInto(p *plan, v reflect.Value) error {
	start := d.lx.Offset()
	lit, isInt, err := d.number()
	if err != nil {
		return err
	}
	bad := func() error {
		d.record(&problem{path: d.Pointer(), rule: violation.RuleType, msg: fmt.Sprintf("want %s, got %s", rangeOf(p.t), lit), cause: ErrType, offset: start})
		return nil
	}
	switch p.kind {
	case kInt:
		if !isInt {
			return bad()
		}
		n, err := strconv.ParseInt(string(lit), 10, p.t.Bits())
		if err != nil {
			return bad()
		}
		v.SetInt(n)
	case kUint:
		if !isInt {
			return bad()
		}
		n, err := strconv.ParseUint(string(lit), 10, p.t.Bits())
		if err != nil {
			return bad()
		}
		v.SetUint(n)
	case kFloat:
		f, err := strconv.ParseFloat(string(lit), p.t.Bits())
		if err != nil {
			return bad()
		}
		v.SetFloat(f)
	}
	return nil
}

func rangeOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number that fits " + t.Kind().String()
	}
	return "an integer that fits " + t.Kind().String()
}

func (d *Decoder) structValue(p *plan, v reflect.Value) error {
	var seen uint64
	base := len(d.keys)
	defer func() { d.keys = d.keys[:base] }()
	err := d.members(func(kb []byte, at int) error {
		i := -1
		for j := range p.fields {
			if p.fields[j].name == string(kb) {
				i = j
				break
			}
		}
		if i < 0 {
			key := string(kb)
			for _, k := range d.keys[base:] {
				if k == key {
					return d.fatalAt(at, canon.ErrDuplicateKey, strconv.Quote(key))
				}
			}
			d.keys = append(d.keys, key)
			d.push(key)
			defer d.pop()
			if !d.allowUnknown {
				d.record(&problem{path: d.Pointer(), rule: violation.RuleUnknownField, msg: "unknown member", cause: ErrUnknown, offset: at})
			}
			return d.Skip()
		}
		if seen&(1<<i) != 0 {
			return d.fatalAt(at, canon.ErrDuplicateKey, strconv.Quote(p.fields[i].name))
		}
		seen |= 1 << i
		f := &p.fields[i]
		d.push(f.name)
		err := d.value(f.plan, fieldOf(v, f.index))
		d.pop()
		return err
	})
	if err != nil {
		return err
	}
	for i := range p.fields {
		if f := &p.fields[i]; f.required && seen&(1<<i) == 0 {
			d.push(f.name)
			d.record(&problem{path: d.Pointer(), rule: violation.RuleRequired, msg: "missing", cause: ErrMissing, offset: d.lx.Offset()})
			d.pop()
		}
	}
	return nil
}

func fieldOf(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	for _, i := range index {
		v = v.Field(i)
	}
	return v
}

// any reads the next value as canon.Decode does: map[string]any, []any,
// string, bool, nil and json.Number.
func (d *Decoder) any() (any, error) {
	switch d.Peek() {
	case Object:
		m := map[string]any{}
		err := d.Object(func(key string) error {
			x, err := d.any()
			m[key] = x
			return err
		})
		return m, err
	case Array:
		list := []any{}
		err := d.Array(func(int) error {
			x, err := d.any()
			list = append(list, x)
			return err
		})
		return list, err
	case String:
		s, err := d.str()
		return string(s), err
	case Number:
		lit, _, err := d.number()
		return json.Number(lit), err
	case Bool:
		return d.ReadBool()
	case Null:
		return nil, d.literal("null")
	}
	return nil, d.Skip()
}

// Any reads the next value as canon.Decode does (map[string]any, []any,
// string, bool, nil and json.Number).
func (d *Decoder) Any() (any, error) { return d.any() }
