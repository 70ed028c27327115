package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Marshal returns the canonical JSON encoding of v.
//
// The common dynamic shapes — nil, bool, string, the integer and float
// kinds, json.Number, json.RawMessage, []any, map[string]any,
// map[string]string, []string — are encoded directly. Any other value goes
// through encoding/json (with HTML escaping off, so "<" stays "<") and is
// then canonicalised by Transform, so struct tags and MarshalJSON methods
// are honoured. The limits of Transform apply (a non-finite float is an
// error), and one more, because a Go integer is meant exactly: Marshal
// never writes an integer with other digits than it was given. RFC 8785
// writes a double with the shortest digits that read back as it, so
// int64(1)<<60 would come out as 1152921504606847000, 24 above it, and
// 2^53+1 is not a double at all: both are refused with ErrUnsafeInteger
// (send such values as decimal strings), while 2^53 and 10^19 are written
// as their digits. The rule covers every integer literal Marshal writes,
// including those encoding/json writes for struct fields, json.Number and
// json.RawMessage. A float64 is a double and is always written as
// RFC 8785 writes it (float64(1<<60) as 1152921504606847000).
func Marshal(v any) ([]byte, error) {
	return AppendMarshal(nil, v)
}

// AppendMarshal appends the canonical JSON encoding of v to dst.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

// appendValue appends v, which sits inside depth arrays and objects.
func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	tooDeep := func() ([]byte, error) {
		return dst, &SyntaxError{Err: ErrTooDeep, Detail: fmt.Sprintf("more than %d levels", MaxDepth)}
	}
	switch v.(type) {
	case []any, []string, map[string]any, map[string]string:
		if depth >= MaxDepth { // v would be level depth+1
			return tooDeep()
		}
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		if !utf8.ValidString(x) {
			return dst, &SyntaxError{Err: ErrInvalidUTF8}
		}
		return AppendString(dst, x), nil
	case int:
		return appendInt(dst, int64(x))
	case int8:
		return appendInt(dst, int64(x))
	case int16:
		return appendInt(dst, int64(x))
	case int32:
		return appendInt(dst, int64(x))
	case int64:
		return appendInt(dst, x)
	case uint:
		return appendUint(dst, uint64(x))
	case uint8:
		return appendUint(dst, uint64(x))
	case uint16:
		return appendUint(dst, uint64(x))
	case uint32:
		return appendUint(dst, uint64(x))
	case uint64:
		return appendUint(dst, x)
	case float32:
		// As encoding/json does (and so as a float32 inside a struct comes
		// out): the shortest digits that round-trip as a float32, read
		// back as a double.
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return appendFloat(dst, float64(x))
		}
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
		return appendFloat(dst, f)
	case float64:
		return appendFloat(dst, x)
	case json.Number:
		// A number literal only (Transform checks the rest), as
		// encoding/json insists: no other JSON spliced in through it.
		if n := len(x); n == 0 || !(x[0] == '-' || x[0] >= '0' && x[0] <= '9') || x[n-1] < '0' || x[n-1] > '9' {
			return dst, &SyntaxError{Err: ErrSyntax, Detail: fmt.Sprintf("json.Number %q is not a number literal", string(x))}
		}
		return appendTransformMode(dst, []byte(x), depth, true)
	case json.RawMessage:
		return appendTransformMode(dst, x, depth, true)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case []string:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := sortedKeys(x)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, k, depth+1); err != nil {
				return dst, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, x[k], depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case map[string]string:
		keys := sortedKeys(x)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, k, depth+1); err != nil {
				return dst, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, x[k], depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return dst, fmt.Errorf("%w: %v", ErrUnsupportedVal, err)
		}
		return appendTransformMode(dst, bytes.TrimRight(buf.Bytes(), "\n"), depth, true)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return CompareUTF16([]byte(keys[i]), []byte(keys[j])) < 0 })
	return keys
}

func appendInt(dst []byte, v int64) ([]byte, error) {
	u := uint64(v)
	if v < 0 {
		u = -u // two's complement: right for math.MinInt64 too
	}
	if !keepsDigits(u) {
		return dst, &SyntaxError{Err: ErrUnsafeInteger, Detail: strconv.FormatInt(v, 10) + " would not keep its digits; send it as a string"}
	}
	return AppendFloat(dst, float64(v)), nil
}

func appendUint(dst []byte, v uint64) ([]byte, error) {
	if !keepsDigits(v) {
		return dst, &SyntaxError{Err: ErrUnsafeInteger, Detail: strconv.FormatUint(v, 10) + " would not keep its digits; send it as a string"}
	}
	return AppendFloat(dst, float64(v)), nil
}

// keepsDigits reports whether canonical JSON writes the integer u with
// u's own digits: it is a double whose canonical text spells u.
func keepsDigits(u uint64) bool {
	if u <= MaxSafeInteger {
		return true
	}
	var x, y [24]byte
	return bytes.Equal(AppendFloat(x[:0], float64(u)), strconv.AppendUint(y[:0], u, 10))
}

func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &SyntaxError{Err: ErrNonFinite}
	}
	return AppendFloat(dst, f), nil
}
