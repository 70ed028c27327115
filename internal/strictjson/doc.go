// Package strictjson is the one way Verity reads JSON: typed, single-pass
// decoding of one JSON text into tagged Go structs, as strict as canonical
// JSON and stricter than encoding/json. What that means for a reader of
// Verity's formats, and which decoders use it, is explained once, in
// REFERENCE.md's "One way to read JSON"; this page is the package's API.
//
//	var e entryWire
//	if err := strictjson.Unmarshal(payload, &e); err != nil {
//		var se *strictjson.Error // every problem, with a JSON Pointer each
//		…
//	}
//	return e.check() // what types cannot say
//
// # What it enforces
//
// The Decoder reads its tokens with canon.Scanner, the lexer of
// canon.Transform, so the text is refused as a whole (one problem, rule
// violation.RuleSyntax or RuleDuplicateKey, wrapping a canon sentinel in a
// *canon.SyntaxError) when it is not what canon.Transform accepts: invalid grammar, a member
// twice in one object (compared after unescaping), invalid UTF-8, a lone
// surrogate, an integer literal a double reader would round, a number
// beyond the doubles, nesting deeper than Options.MaxDepth (512), or
// anything after the value.
//
// Within a strict text, each further problem is reported once, with an
// RFC 6901 pointer to the value, a rule and one wording, and reading goes
// on past it so that one call finds them all:
//
//   - RuleType, "want an object, got a string": the wrong JSON type. null
//     is a value of its own: only a pointer, an interface, a
//     json.RawMessage or a type that reads itself accepts it. An integer
//     field takes an integer literal in its range only (1.0 and 1e0 are
//     numbers, not integers, as encoding/json has it).
//   - RuleUnknownField, "unknown member": a member no field names, unless
//     Options.AllowUnknown.
//   - RuleRequired, "missing": a member absent whose field's tag has none
//     of omitempty, omitzero or optional.
//   - the rule an Unmarshaler gives (Decoder.Errorf, Decoder.Fail), or
//     "value" for another error it, a json.Unmarshaler or an
//     encoding.TextUnmarshaler returns.
//
// # Types
//
// Structs map members to fields by the json tag's name, exactly (not
// case-insensitively as encoding/json does); untagged embedded structs are
// flattened. Besides bool, strings, integers, floats, slices, maps with
// string keys, pointers and any (read as canon.Decode reads: json.Number
// for numbers), a type may read itself: Unmarshaler (UnmarshalStrict with
// the Decoder's Read methods, Object, Array, Decode), json.Unmarshaler
// (given the value's bytes) or encoding.TextUnmarshaler (given a string's
// unescaped bytes).
package strictjson
