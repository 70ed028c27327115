package speculative

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

type segKind uint8

const (
	segString segKind = iota
	segBytes
	segIndex
)

// seg is one step of the current path. Byte keys alias the text being
// scanned, which does not change during a check; a path is copied into a
// string only when a marker is found, so the clean path never allocates.
type seg struct {
	kind segKind
	key  []byte
	str  string
	idx  int
}

// walker carries one check: the remaining work budget, the JSON-in-string
// layer, the path, and what was found.
type walker struct {
	budget int
	enc    int
	all    bool // collect up to max findings instead of stopping at the first
	strict bool // RuleResidue: any epistemic_status key
	max    int
	muted  int // inside a subtree already reported (all mode)
	found  []Finding
	err    error
	path   []seg
	// pathBuf backs path for the first levels, so that a check of an
	// ordinary document makes one allocation, the walker itself.
	pathBuf [24]seg
}

func newWalker(all, strict bool, max int) *walker {
	w := &walker{budget: MaxWork, all: all, strict: strict, max: max}
	w.path = w.pathBuf[:0]
	return w
}

func (w *walker) limit(name string, max int) bool {
	if w.err == nil {
		w.err = &LimitError{Limit: name, Path: pointer(w.path), Max: max}
	}
	return true
}

func (w *walker) spend(n int) bool {
	w.budget -= n
	if w.budget < 0 {
		return w.limit("work", MaxWork)
	}
	return false
}

// hit records a finding at the current path and reports whether the walk
// should stop.
func (w *walker) hit(rule Rule, marker, key string) bool {
	if w.muted > 0 {
		return false
	}
	w.found = append(w.found, Finding{
		Path:      pointer(w.path),
		Marker:    marker,
		Key:       key,
		Rule:      rule,
		Encodings: w.enc,
	})
	return !w.all || len(w.found) >= w.max
}

// lastKey returns the innermost key on the path.
func (w *walker) lastKey() string {
	for i := len(w.path) - 1; i >= 0; i-- {
		switch s := w.path[i]; s.kind {
		case segString:
			return s.str
		case segBytes:
			return string(s.key)
		}
	}
	return ""
}

// value walks a decoded Go value. status is the marker name when v is the
// value of a status key ("epistemic_status" or "lane"). It reports
// whether the walk must stop.
func (w *walker) value(v any, depth int, status string) bool {
	if w.spend(1) {
		return true
	}
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number:
		return false
	case string:
		return w.str(x, hasQuote(x), depth, status)
	case map[string]any:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		return walkMap(w, x, depth, func(w *walker, v any, d int, st string) bool { return w.value(v, d, st) })
	case []any:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		w.path = append(w.path, seg{kind: segIndex})
		top := len(w.path) - 1
		defer func() { w.path = w.path[:top] }()
		for i, e := range x {
			w.path[top].idx = i
			if w.value(e, depth+1, status) {
				return true
			}
		}
		return false
	case map[string]string:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		return walkMap(w, x, depth, func(w *walker, v string, d int, st string) bool {
			return w.spend(1) || w.str(v, hasQuote(v), d, st)
		})
	case []string:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		for i, e := range x {
			w.path = append(w.path, seg{kind: segIndex, idx: i})
			stop := w.spend(1) || w.str(e, hasQuote(e), depth+1, status)
			w.path = w.path[:len(w.path)-1]
			if stop {
				return true
			}
		}
		return false
	case []map[string]any:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		for i, e := range x {
			w.path = append(w.path, seg{kind: segIndex, idx: i})
			stop := w.value(e, depth+1, "")
			w.path = w.path[:len(w.path)-1]
			if stop {
				return true
			}
		}
		return false
	case map[string]json.RawMessage:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		return walkMap(w, x, depth, func(w *walker, v json.RawMessage, d int, st string) bool {
			return w.bytes(v, d, st)
		})
	case json.RawMessage:
		return w.bytes(x, depth, status)
	case []byte:
		return w.bytes(x, depth, status)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			if w.err == nil {
				w.err = fmt.Errorf("%w: %T at %q cannot be encoded as JSON: %v", ErrMalformed, v, pointer(w.path), err)
			}
			return true
		}
		if w.bytes(b, depth, status) {
			return true
		}
		// encoding/json wrote every []byte inside v as base64, which hides
		// the JSON it may hold: check those bytes as JSON too.
		return w.goBytes(reflect.ValueOf(v), depth, status)
	}
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// goBytes walks the part of a Go value that encoding/json encodes and checks
// every []byte in it as Detect checks a []byte: as a JSON text, or as text
// for the last-resort wire. Values with their own JSON or text encoding are
// not entered (their encoding was walked already). Path segments follow
// the JSON names of fields and the keys of maps.
func (w *walker) goBytes(v reflect.Value, depth int, status string) bool {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if !v.IsValid() || w.spend(1) {
		return w.err != nil
	}
	t := v.Type()
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) ||
		v.CanAddr() && (reflect.PointerTo(t).Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		return false
	}
	switch v.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return w.bytes(v.Bytes(), depth, status)
		}
		fallthrough
	case reflect.Array:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		if scalarKind(t.Elem().Kind()) {
			return false // no []byte inside
		}
		for i := 0; i < v.Len(); i++ {
			w.path = append(w.path, seg{kind: segIndex, idx: i})
			stop := w.goBytes(v.Index(i), depth+1, status)
			w.path = w.path[:len(w.path)-1]
			if stop {
				return true
			}
		}
	case reflect.Map:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		if scalarKind(t.Elem().Kind()) {
			return false // no []byte inside
		}
		keys := v.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			if k.Kind() == reflect.String {
				names[i] = k.String()
			} else {
				names[i] = fmt.Sprint(k.Interface())
			}
		}
		order := make([]int, len(keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
		for _, i := range order {
			if w.goMember(names[i], v.MapIndex(keys[i]), depth) {
				return true
			}
		}
	case reflect.Struct:
		if depth >= MaxDepth {
			return w.limit("depth", MaxDepth)
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					// Promoted fields: no segment of their own.
					if w.goBytes(v.Field(i), depth, "") {
						return true
					}
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if w.goMember(name, v.Field(i), depth) {
				return true
			}
		}
	}
	return false
}

func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

func (w *walker) goMember(name string, v reflect.Value, depth int) bool {
	w.path = append(w.path, seg{kind: segString, str: name})
	defer func() { w.path = w.path[:len(w.path)-1] }()
	status := ""
	if class, marker := classify(name); class == keyStatus {
		status = marker
	}
	return w.goBytes(v, depth+1, status)
}

// bytes walks a []byte or json.RawMessage: a JSON text, or, when it is not
// one, text that only the last-resort wire looks at.
func (w *walker) bytes(b []byte, depth int, status string) bool {
	ok, stop := w.parseJSON(b, depth, status)
	if stop || ok {
		return stop
	}
	if status != "" && isSpeculativeValue(b) {
		return w.hit(RuleStatus, status, w.lastKey())
	}
	if m, found := quotedMarker(b); found {
		return w.hit(RuleQuoted, m, "")
	}
	return false
}

// walkMap visits every member of a Go map. In first-marker mode the finding
// under the byte-wise least key wins, so the answer does not depend on the
// map's iteration order; an error anywhere wins over any finding.
func walkMap[V any](w *walker, m map[string]V, depth int, visit func(*walker, V, int, string) bool) bool {
	if w.all {
		for k, v := range m {
			if member(w, k, v, depth, visit) {
				return true
			}
		}
		return false
	}
	var best Finding
	bestKey, have := "", false
	for k, v := range m {
		n := len(w.found)
		if !member(w, k, v, depth, visit) {
			continue
		}
		if w.err != nil {
			return true
		}
		f := w.found[n]
		w.found = w.found[:n]
		if !have || k < bestKey {
			best, bestKey, have = f, k, true
		}
	}
	if have {
		w.found = append(w.found, best)
	}
	return have
}

func member[V any](w *walker, k string, v V, depth int, visit func(*walker, V, int, string) bool) bool {
	w.path = append(w.path, seg{kind: segString, str: k})
	defer func() { w.path = w.path[:len(w.path)-1] }()
	if w.spend(len(k)) {
		return true
	}
	class, marker := classify(k)
	if class == keyPlain && hasQuote(k) && w.str(k, true, depth+1, "") {
		return true // the key holds JSON or a quoted marker token
	}
	status, stop, mute := w.key(k, class, marker)
	if stop {
		return true
	}
	if mute {
		w.muted++
		defer func() { w.muted-- }()
	}
	return visit(w, v, depth+1, status)
}

// key applies the key rules. It returns the status marker to check the
// value against, whether to stop, and whether the value's subtree is
// already reported (all mode walks it muted, for limits and syntax only).
func (w *walker) key(k string, class keyClass, marker string) (status string, stop, mute bool) {
	switch class {
	case keyContext:
		return "", w.hit(RuleContext, marker, k), true
	case keyArtifact:
		return "", w.hit(RuleArtifact, marker, k), true
	case keyStatus:
		if w.strict && marker == "epistemic_status" {
			return "", w.hit(RuleResidue, marker, k), true
		}
		return marker, false, false
	}
	return "", false, false
}

func hasQuote(s string) bool {
	return strings.IndexByte(s, '"') >= 0 || strings.IndexByte(s, '\'') >= 0
}

func hasQuoteBytes(s []byte) bool {
	return bytes.IndexByte(s, '"') >= 0 || bytes.IndexByte(s, '\'') >= 0
}

// str checks a string value: its own value when it sits under a status
// key, the JSON it holds (objects, arrays, and JSON strings, layer after
// layer), and, when it holds no JSON, the last-resort wire. quotes says
// whether s contains a quote character at all.
func str[T ~string | ~[]byte](w *walker, s T, quotes bool, depth int, status string) bool {
	if w.spend(len(s)) {
		return true
	}
	if status != "" && isSpeculativeValue(s) {
		return w.hit(RuleStatus, status, w.lastKey())
	}
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	if i == len(s) {
		return false
	}
	switch s[i] {
	case '{', '[':
		if w.enc >= MaxEncodings {
			if json.Valid([]byte(s[i:])) {
				return w.limit("encodings", MaxEncodings)
			}
			break // text that merely starts with a bracket
		}
		w.enc++
		ok, stop := w.parseJSON([]byte(s[i:]), depth, status)
		w.enc--
		if stop || ok {
			return stop
		}
	case '"':
		if inner, ok := decodeJSONString([]byte(s[i:])); ok {
			if w.enc >= MaxEncodings {
				return w.limit("encodings", MaxEncodings)
			}
			// The string is one quoted JSON string: a quoted token.
			if status != "" && isSpeculativeValue(inner) {
				return w.hit(RuleStatus, status, w.lastKey())
			}
			if m, found := tokenMarker(inner); found {
				return w.hit(RuleQuoted, m, "")
			}
			n := len(w.found)
			w.enc++
			stop := str(w, inner, hasQuoteBytes(inner), depth, status)
			w.enc--
			if stop || len(w.found) > n {
				return stop
			}
			// Decoding moves quotes: a token may be quoted only in the
			// text as written ("\"0\"speculative" holds "speculative"
			// between an escaped quote and the closing one). The text
			// as written is JSON, so the folding wire below would read
			// its escaped quotes as quotes and flag clean documents
			// ("{\"epistemic_status\":\"grounded\"}"); it gets the
			// specification's literal wire instead.
			if m, found := literalWire(s); found {
				return w.hit(RuleQuoted, m, "")
			}
			return false
		}
	}
	if !quotes {
		return false
	}
	if m, found := quotedMarker(s); found {
		return w.hit(RuleQuoted, m, "")
	}
	return false
}

// literalWire is the specification's last-resort wire exactly: one of its
// tokens, in double quotes, as a case-insensitive substring of s.
func literalWire[T ~string | ~[]byte](s T) (string, bool) {
	lower := strings.ToLower(string(s))
	for _, tok := range [...]struct{ quoted, marker string }{
		{`"speculative"`, "speculative"},
		{`"epistemic_status"`, "epistemic_status"},
		{`"epistemic-status"`, "epistemic_status"},
		{`"speculative_context"`, "speculative_context"},
		{`"speculative-context"`, "speculative_context"},
	} {
		if strings.Contains(lower, tok.quoted) {
			return tok.marker, true
		}
	}
	return "", false
}

func (w *walker) str(s string, quotes bool, depth int, status string) bool {
	return str(w, s, quotes, depth, status)
}

// decodeJSONString decodes b when it is exactly one JSON string (with
// optional surrounding white space).
func decodeJSONString(b []byte) ([]byte, bool) {
	p := parser{d: b}
	raw, esc, ok := p.scanString()
	if !ok {
		return nil, false
	}
	p.ws()
	if p.i != len(p.d) {
		return nil, false
	}
	if !esc {
		return raw, true
	}
	return unescape(raw)
}

// parser is an RFC 8259 reader that walks a JSON text in place. It also
// accepts the literals NaN, Infinity and -Infinity, as the JSON readers of
// several agent runtimes (Python's json module among them) do: a payload
// those runtimes read as a structure is checked as a structure.
type parser struct {
	w *walker
	d []byte
	i int
}

// parseJSON walks d as one JSON text. ok reports that d is exactly one
// valid JSON text; stop that the walk must end (a finding in first-marker
// mode, or an error). Findings made before a syntax error stand.
func (w *walker) parseJSON(d []byte, depth int, status string) (ok, stop bool) {
	if w.spend(len(d)) {
		return false, true
	}
	p := parser{w: w, d: d}
	p.ws()
	ok, stop = p.value(depth, status)
	if !ok || stop {
		return ok, stop
	}
	p.ws()
	return p.i == len(d), false
}

func (p *parser) ws() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int, status string) (ok, stop bool) {
	if p.i >= len(p.d) {
		return false, false
	}
	switch c := p.d[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth, status)
	case c == '"':
		raw, esc, quote, ok := p.scanStringFlags()
		if !ok {
			return false, false
		}
		if esc {
			if raw, ok = unescape(raw); !ok {
				return false, false
			}
			quote = hasQuoteBytes(raw)
		}
		return true, str(p.w, raw, quote, depth, status)
	case c == 't':
		return p.literal("true"), false
	case c == 'f':
		return p.literal("false"), false
	case c == 'n':
		return p.literal("null"), false
	case c == 'N':
		return p.literal("NaN"), false
	case c == 'I':
		return p.literal("Infinity"), false
	case c == '-' && p.i+1 < len(p.d) && p.d[p.i+1] == 'I':
		p.i++
		return p.literal("Infinity"), false
	case c == '-' || '0' <= c && c <= '9':
		return p.number(), false
	}
	return false, false
}

func (p *parser) literal(word string) bool {
	if len(p.d)-p.i < len(word) || string(p.d[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

func (p *parser) digits() bool {
	start := p.i
	for p.i < len(p.d) && '0' <= p.d[p.i] && p.d[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

func (p *parser) number() bool {
	if p.d[p.i] == '-' {
		p.i++
	}
	if p.i >= len(p.d) {
		return false
	}
	if p.d[p.i] == '0' {
		p.i++
	} else if !p.digits() {
		return false
	}
	if p.i < len(p.d) && p.d[p.i] == '.' {
		p.i++
		if !p.digits() {
			return false
		}
	}
	if p.i < len(p.d) && (p.d[p.i] == 'e' || p.d[p.i] == 'E') {
		p.i++
		if p.i < len(p.d) && (p.d[p.i] == '+' || p.d[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return false
		}
	}
	return true
}

// strStop marks the bytes that end the fast run of a string scan.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'], t['\''] = true, true, true
	return t
}()

// scanString reads a string starting at the opening quote and returns its
// raw contents (escapes not decoded).
func (p *parser) scanString() (raw []byte, esc, ok bool) {
	raw, esc, _, ok = p.scanStringFlags()
	return raw, esc, ok
}

func (p *parser) scanStringFlags() (raw []byte, esc, quote, ok bool) {
	d := p.d
	i := p.i + 1
	start := i
	for {
		for i < len(d) && !strStop[d[i]] {
			i++
		}
		if i >= len(d) {
			return nil, false, false, false
		}
		switch c := d[i]; {
		case c == '"':
			p.i = i + 1
			return d[start:i], esc, quote, true
		case c == '\\':
			esc = true
			i += 2
		case c == '\'':
			quote = true
			i++
		default: // a raw control character
			return nil, false, false, false
		}
	}
}

// unescape decodes the escapes of a JSON string's raw contents, checking
// them as it goes. A lone surrogate becomes U+FFFD, as encoding/json does.
func unescape(raw []byte) ([]byte, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return nil, false
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return nil, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(raw, i+2); ok && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return nil, false
		}
		i += 2
	}
	return out, true
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

func (p *parser) object(depth int) (ok, stop bool) {
	w := p.w
	if depth >= MaxDepth {
		return false, w.limit("depth", MaxDepth)
	}
	p.i++
	p.ws()
	if p.i < len(p.d) && p.d[p.i] == '}' {
		p.i++
		return true, false
	}
	for {
		if p.i >= len(p.d) || p.d[p.i] != '"' {
			return false, false
		}
		raw, esc, ok := p.scanString()
		if !ok {
			return false, false
		}
		key := raw
		if esc {
			if key, ok = unescape(raw); !ok {
				return false, false
			}
		}
		p.ws()
		if p.i >= len(p.d) || p.d[p.i] != ':' {
			return false, false
		}
		p.i++
		p.ws()
		w.path = append(w.path, seg{kind: segBytes, key: key})
		class, marker := classify(key)
		if class == keyPlain && hasQuoteBytes(key) && str(w, key, true, depth+1, "") {
			// The key holds JSON or a quoted marker token.
			w.path = w.path[:len(w.path)-1]
			return false, true
		}
		var status string
		var mute bool
		switch {
		case class == keyStatus && !(w.strict && marker == "epistemic_status"):
			status = marker // no hit yet: the value decides
		case class != keyPlain:
			status, stop, mute = w.key(string(key), class, marker)
			if stop {
				w.path = w.path[:len(w.path)-1]
				return false, true
			}
		}
		if mute {
			w.muted++
		}
		ok, stop = p.value(depth+1, status)
		if mute {
			w.muted--
		}
		w.path = w.path[:len(w.path)-1]
		if !ok || stop {
			return ok, stop
		}
		p.ws()
		if p.i >= len(p.d) {
			return false, false
		}
		switch p.d[p.i] {
		case ',':
			p.i++
			p.ws()
		case '}':
			p.i++
			return true, false
		default:
			return false, false
		}
	}
}

func (p *parser) array(depth int, status string) (ok, stop bool) {
	w := p.w
	if depth >= MaxDepth {
		return false, w.limit("depth", MaxDepth)
	}
	p.i++
	p.ws()
	if p.i < len(p.d) && p.d[p.i] == ']' {
		p.i++
		return true, false
	}
	w.path = append(w.path, seg{kind: segIndex})
	top := len(w.path) - 1
	defer func() { w.path = w.path[:top] }()
	for idx := 0; ; idx++ {
		w.path[top].idx = idx
		ok, stop = p.value(depth+1, status)
		if !ok || stop {
			return ok, stop
		}
		p.ws()
		if p.i >= len(p.d) {
			return false, false
		}
		switch p.d[p.i] {
		case ',':
			p.i++
			p.ws()
		case ']':
			p.i++
			return true, false
		default:
			return false, false
		}
	}
}
