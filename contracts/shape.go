package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/verity-go/verity/internal/strictjson"
)

// A shape is one object of the embedded JSON Schemas, compiled so that a
// document can be checked against its kind's schema in one pass over its
// bytes, with the strict reader and without building a tree. Only the
// keywords the schemas use are compiled (type, enum, required,
// properties, items, pattern, minLength, minimum, maximum, format
// "date-time", not, $ref); a schema with any other keyword does not
// compile, and every document then takes the schema library's path.
// Each keyword means what it means to the schema library: numbers are
// compared by their exact decimal value, patterns are the same Go regular
// expressions, and date-time is the library's own format checker.
type shape struct {
	rule      string // x-verity-rule: the rule a failing keyword reports ("" for schema.<keyword>)
	types     uint8  // allowed JSON types (bits below), 0 without "type"
	enum      *enumSet
	pattern   *regexp.Regexp
	minLength int // -1 without minLength
	minimum   *bound
	maximum   *bound
	dateTime  bool
	not       *shape
	ref       *shape
	required  []string
	props     map[string]*shape
	items     *shape
}

// JSON types of "type" ("integer" is a number of integral value).
const (
	typeNull uint8 = 1 << iota
	typeBool
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeBits = map[string]uint8{
	"null": typeNull, "boolean": typeBool, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// enumSet holds an enum of strings and null (the only values the
// schemas list).
type enumSet struct {
	strings []string
	null    bool
}

// bound is a minimum or maximum, by its exact value.
type bound = decimal

// node is what a value must satisfy at one place of a document: every
// schema object that applies there (an object and those its $ref names),
// with the members and items of all of them merged, so that the value is
// read once.
type node struct {
	atoms    []*shape
	props    map[string]*node
	items    *node
	required []requirement
	reqBits  map[string]uint64
	compares bool // a number here is compared with big.Rat by the library (minimum, maximum, integer)
}

type requirement struct {
	name string
	rule string
}

// shapes holds the compiled node of every kind, or the error that kept a
// schema from compiling.
var shapes = sync.OnceValues(func() (map[Kind]*node, error) {
	c := &shapeCompiler{docs: map[string]any{}, shapes: map[string]*shape{}, nodes: map[string]*node{}}
	if err := eachSchema(func(id string, b []byte) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return err
		}
		c.docs[id] = doc
		return nil
	}); err != nil {
		return nil, err
	}
	out := make(map[Kind]*node, len(allKinds))
	for _, k := range allKinds {
		s, err := c.shape(k.SchemaID(), "")
		if err != nil {
			return nil, fmt.Errorf("contracts: compiling the shape of %s: %w", k, err)
		}
		n, err := c.node([]*shape{s}, 0)
		if err != nil {
			return nil, fmt.Errorf("contracts: compiling the shape of %s: %w", k, err)
		}
		out[k] = n
	}
	return out, nil
})

type shapeCompiler struct {
	docs   map[string]any    // schema documents by $id
	shapes map[string]*shape // by "<$id>#<pointer>"
	nodes  map[string]*node  // by the atoms' addresses
}

var errUnsupported = errors.New("unsupported schema")

// shape compiles the object at pointer ptr of the document u.
func (c *shapeCompiler) shape(u, ptr string) (*shape, error) {
	key := u + "#" + ptr
	if s, ok := c.shapes[key]; ok {
		if s == nil {
			return nil, fmt.Errorf("%w: $ref cycle at %s", errUnsupported, key)
		}
		return s, nil
	}
	c.shapes[key] = nil
	v, ok := c.docs[u]
	if !ok {
		return nil, fmt.Errorf("%w: unknown schema %s", errUnsupported, u)
	}
	if ptr != "" {
		for _, seg := range strings.Split(ptr, "/")[1:] {
			seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: no %s", errUnsupported, key)
			}
			v = m[seg]
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a schema object", errUnsupported, key)
	}
	s, err := c.compile(u, ptr, obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	c.shapes[key] = s
	return s, nil
}

func (c *shapeCompiler) compile(u, ptr string, obj map[string]any) (*shape, error) {
	s := &shape{minLength: -1}
	for kw, v := range obj {
		var err error
		switch kw {
		case "$schema", "title", "description", "$defs":
		case "$id":
			if ptr != "" || v != u {
				err = errUnsupported
			}
		case "x-verity-rule":
			s.rule, _ = v.(string)
		case "type":
			s.types, err = compileTypes(v)
		case "enum":
			s.enum, err = compileEnum(v)
		case "pattern":
			p, _ := v.(string)
			s.pattern, err = regexp.Compile(p)
		case "minLength":
			var n int64
			n, err = intOf(v)
			s.minLength = int(n)
		case "minimum":
			s.minimum, err = compileBound(v)
		case "maximum":
			s.maximum, err = compileBound(v)
		case "format":
			if v != "date-time" {
				err = errUnsupported
			}
			s.dateTime = true
		case "not":
			m, _ := v.(map[string]any)
			s.not, err = c.compile(u, ptr+"/not", m)
			for x := s.not; err == nil && x != nil; x = x.ref {
				if x.props != nil || x.items != nil || x.required != nil {
					err = errUnsupported // a not is evaluated on the value alone
				}
			}
		case "$ref":
			ref, _ := v.(string)
			var base, target *url.URL
			base, err = url.Parse(u)
			if err == nil {
				target, err = base.Parse(ref)
			}
			if err == nil {
				frag := target.Fragment
				target.Fragment = ""
				s.ref, err = c.shape(target.String(), frag)
			}
		case "required":
			list, _ := v.([]any)
			for _, x := range list {
				name, ok := x.(string)
				if !ok {
					err = errUnsupported
				}
				s.required = append(s.required, name)
			}
		case "properties":
			m, _ := v.(map[string]any)
			s.props = map[string]*shape{}
			for name := range m {
				s.props[name], err = c.shape(u, ptr+"/properties/"+escapePointer(name))
				if err != nil {
					break
				}
			}
		case "items":
			s.items, err = c.shape(u, ptr+"/items")
		default:
			err = errUnsupported
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kw, err)
		}
	}
	return s, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func compileTypes(v any) (uint8, error) {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	var bits uint8
	for _, x := range list {
		name, _ := x.(string)
		b, ok := typeBits[name]
		if !ok {
			return 0, errUnsupported
		}
		bits |= b
	}
	return bits, nil
}

func compileEnum(v any) (*enumSet, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errUnsupported
	}
	e := &enumSet{}
	for _, x := range list {
		switch x := x.(type) {
		case string:
			e.strings = append(e.strings, x)
		case nil:
			e.null = true
		default:
			return nil, errUnsupported
		}
	}
	return e, nil
}

func intOf(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errUnsupported
	}
	return n.Int64()
}

func compileBound(v any) (*bound, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, errUnsupported
	}
	d := parseDecimal([]byte(n))
	return &d, nil
}

// node merges the atoms, with every object their $refs name, into the
// node of one place.
func (c *shapeCompiler) node(atoms []*shape, depth int) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%w: nesting", errUnsupported)
	}
	var all []*shape
	add := func(s *shape) {
		for ; s != nil; s = s.ref {
			for _, a := range all {
				if a == s {
					return
				}
			}
			all = append(all, s)
		}
	}
	for _, s := range atoms {
		add(s)
	}
	var key strings.Builder
	for _, s := range all {
		fmt.Fprintf(&key, "%p,", s)
	}
	if n, ok := c.nodes[key.String()]; ok {
		return n, nil
	}
	n := &node{atoms: all}
	c.nodes[key.String()] = n
	props := map[string][]*shape{}
	var items []*shape
	for _, s := range all {
		for name, p := range s.props {
			props[name] = append(props[name], p)
		}
		if s.items != nil {
			items = append(items, s.items)
		}
		for _, name := range s.required {
			n.required = append(n.required, requirement{name: name, rule: s.rule})
		}
		if s.minimum != nil || s.maximum != nil || s.types&typeInteger != 0 && s.types&typeNumber == 0 {
			n.compares = true
		}
	}
	if len(n.required) > 64 {
		return nil, fmt.Errorf("%w: more than 64 required members", errUnsupported)
	}
	var err error
	if len(props) > 0 {
		n.props = make(map[string]*node, len(props))
		for name, list := range props {
			if n.props[name], err = c.node(list, depth+1); err != nil {
				return nil, err
			}
		}
	}
	if len(items) > 0 {
		if n.items, err = c.node(items, depth+1); err != nil {
			return nil, err
		}
	}
	if len(n.required) > 0 {
		n.reqBits = make(map[string]uint64, len(n.required))
		for i, r := range n.required {
			n.reqBits[r.name] |= 1 << i
		}
	}
	return n, nil
}

// shapeOK reports whether data is one strict JSON text of the kind's
// schema: whether the schema library, validating it, would report no
// violation that cfg keeps. It is false as well when the shapes did not
// compile.
func shapeOK(kind Kind, data []byte, cfg *config) bool {
	ok, _ := readShape(kind, data, cfg)
	return ok
}

// readShape is shapeOK, and reports as well whether the document has an
// integer literal of more than 15 digits, which fromTree reads through
// its double (as canonical JSON writes it) and strictjson exactly.
func readShape(kind Kind, data []byte, cfg *config) (ok, longInt bool) {
	nodes, err := shapes()
	if err != nil {
		return false, false
	}
	r := shapeReader{n: nodes[kind], cfg: cfg}
	return strictjson.Unmarshal(data, &r) == nil, r.longInt
}

// shapeReader reads one document against a node (strictjson.Unmarshaler).
type shapeReader struct {
	n       *node
	cfg     *config
	longInt bool
}

// errShape stops a reading at the first value the schema refuses.
var errShape = errors.New("contracts: not of the schema's shape")

func (r *shapeReader) UnmarshalStrict(d *strictjson.Decoder) error { return r.value(d, r.n) }

// counts reports whether a failing keyword of s is a violation under the
// configuration (SpecOnly leaves the extensions' out).
func (r *shapeReader) counts(rule, keyword string) bool {
	if rule == "" {
		rule = "schema." + keyword
	}
	return !r.cfg.skips(rule)
}

// scalar is a value as the keywords see it; for an array or an object
// only its kind.
type scalar struct {
	kind  strictjson.Kind
	str   []byte
	num   decimal
	isInt bool
}

func (r *shapeReader) value(d *strictjson.Decoder, n *node) error {
	var v scalar
	v.kind = d.Peek()
	var err error
	switch v.kind {
	case strictjson.Object, strictjson.Array:
	case strictjson.String:
		v.str, err = d.ReadStringBytes()
	case strictjson.Number:
		var lit []byte
		lit, v.isInt, err = d.ReadNumber()
		if err == nil {
			if v.num = parseDecimal(lit); n.compares && v.num.tooLarge() {
				return errShape
			}
			if v.isInt && len(lit) > 15 {
				r.longInt = true
			}
		}
	case strictjson.Bool:
		_, err = d.ReadBool()
	case strictjson.Null:
		err = d.ReadNull()
	default:
		return d.Skip() // not JSON: the reader says why
	}
	if err != nil {
		return err
	}
	for _, s := range n.atoms {
		if kw := failing(s, &v); kw != "" && r.counts(s.rule, kw) {
			return errShape
		}
	}
	switch v.kind {
	case strictjson.Object:
		var seen uint64
		err := d.Object(func(key string) error {
			seen |= n.reqBits[key]
			if c := n.props[key]; c != nil {
				return r.value(d, c)
			}
			return d.Skip()
		})
		if err != nil {
			return err
		}
		for i, q := range n.required {
			if seen&(1<<i) == 0 && r.counts(q.rule, "required") {
				return errShape
			}
		}
	case strictjson.Array:
		return d.Array(func(int) error {
			if n.items != nil {
				return r.value(d, n.items)
			}
			return d.Skip()
		})
	}
	return nil
}

// failing returns the first keyword of s (and the objects its $refs name
// are separate atoms) that v fails, or "". Keywords about members and
// items are the reader's.
func failing(s *shape, v *scalar) string {
	if s.types != 0 && !hasType(s.types, v) {
		return "type"
	}
	if s.enum != nil && !inEnum(s.enum, v) {
		return "enum"
	}
	switch v.kind {
	case strictjson.String:
		if s.minLength >= 0 && utf8.RuneCount(v.str) < s.minLength {
			return "minLength"
		}
		if s.pattern != nil && !s.pattern.Match(v.str) {
			return "pattern"
		}
		if s.dateTime && !isDateTime(string(v.str)) {
			return "format"
		}
	case strictjson.Number:
		if s.minimum != nil && v.num.cmp(*s.minimum) < 0 {
			return "minimum"
		}
		if s.maximum != nil && v.num.cmp(*s.maximum) > 0 {
			return "maximum"
		}
	}
	if s.not != nil && valid(s.not, v) {
		return "not"
	}
	return ""
}

// valid reports whether v satisfies s and the objects its $refs name,
// every keyword counted (the inside of a not).
func valid(s *shape, v *scalar) bool {
	for ; s != nil; s = s.ref {
		if failing(s, v) != "" {
			return false
		}
	}
	return true
}

var isDateTime = jsonschema.Formats["date-time"]

func hasType(bits uint8, v *scalar) bool {
	switch v.kind {
	case strictjson.Null:
		return bits&typeNull != 0
	case strictjson.Bool:
		return bits&typeBool != 0
	case strictjson.String:
		return bits&typeString != 0
	case strictjson.Array:
		return bits&typeArray != 0
	case strictjson.Object:
		return bits&typeObject != 0
	case strictjson.Number:
		return bits&typeNumber != 0 || bits&typeInteger != 0 && (v.isInt || v.num.integral())
	}
	return false
}

func inEnum(e *enumSet, v *scalar) bool {
	switch v.kind {
	case strictjson.Null:
		return e.null
	case strictjson.String:
		for _, s := range e.strings {
			if string(v.str) == s {
				return true
			}
		}
	}
	return false
}

// decimal is a number literal's exact value: 0.digits × 10^exp, with
// neither leading nor trailing zeros in digits (none for zero).
type decimal struct {
	neg    bool
	digits []byte
	exp    int64
	// exp5 is what big.Rat scales the mantissa by (the exponent less the
	// digits after the point), saturated.
	exp5 int64
}

// maxExponent bounds the decimal scale of a number the schema library
// compares (it does so with big.Rat, which is slow far beyond the
// doubles' ±324 and fails past ±1e6): a literal whose mantissa is not
// zero and whose scale is beyond it is refused as json.decode.
const maxExponent = 10000

func parseDecimal(lit []byte) decimal {
	var d decimal
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	var intDigits, fracDigits int64
	start := -1 // index in lit of the first non-zero digit
	var all []byte
	for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
		intDigits++
		all = append(all, lit[i])
	}
	if i < len(lit) && lit[i] == '.' {
		for i++; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			fracDigits++
			all = append(all, lit[i])
		}
	}
	var x int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		neg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			neg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			if x < 1e15 {
				x = x*10 + int64(lit[i]-'0')
			}
		}
		if neg {
			x = -x
		}
	}
	for k, c := range all {
		if c != '0' {
			start = k
			break
		}
	}
	if start < 0 {
		return decimal{neg: d.neg}
	}
	end := len(all)
	for all[end-1] == '0' {
		end--
	}
	d.digits = all[start:end]
	d.exp = intDigits - int64(start) + x
	d.exp5 = x - fracDigits
	return d
}

// tooLarge reports whether the schema library cannot compare the number.
func (d decimal) tooLarge() bool {
	return len(d.digits) > 0 && (d.exp5 > maxExponent || d.exp5 < -maxExponent)
}

// integral reports whether the value is an integer (1.0 and 1e2 are).
func (d decimal) integral() bool { return int64(len(d.digits)) <= d.exp }

// cmp compares the value with e's.
func (d decimal) cmp(e decimal) int {
	sign := func(x decimal) int {
		switch {
		case len(x.digits) == 0:
			return 0
		case x.neg:
			return -1
		}
		return 1
	}
	sd, se := sign(d), sign(e)
	if sd != se || sd == 0 {
		return cmpInt(sd, se)
	}
	c := 0
	switch {
	case d.exp != e.exp:
		c = cmpInt64(d.exp, e.exp)
	default:
		c = bytes.Compare(d.digits, e.digits)
	}
	if sd < 0 {
		c = -c
	}
	return c
}

func cmpInt(a, b int) int { return cmpInt64(int64(a), int64(b)) }

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
