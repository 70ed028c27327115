// Package value is the kernel's vocabulary for data: a Value is an
// immutable JSON value with strict typing, what a kernel.State maps each
// variable to and what every kernel.Effect carries.
//
// # Strict typing
//
// The integer 1, the float 1.0 and the string "1" are three different
// Values, and so are 0.0 and -0.0 (floats compare by their IEEE-754
// bits); a variable holding Null is different from an absent one. Integer
// arithmetic in the kernel is exact, so a Value keeps its kind: AsInt
// never answers for a float, AsFloat never for an int.
//
//	n := value.Int(3)
//	tags := value.List(value.String("urgent"), value.String("billing"))
//	limits := value.Object(map[string]value.Value{"max": value.Float(2.5)})
//	v, err := value.Of(map[string]any{"sent": 0, "to": []any{"a@example.com"}})
//
// Nothing is aliased: List, Object and Of copy their input, Items, Fields
// and Go copy their output, so a Value can be shared freely.
//
// # JSON
//
// MarshalJSON writes RFC 8785 canonical JSON that keeps the strict typing:
// a float whose canonical text would read as an int is written
// {"$float":"1"}, an int beyond ±(2^53−1) {"$int":"…"}, and an object
// whose one key is one of those escapes {"$object":{…}}. Decode reads that
// form back as strict JSON (REFERENCE.md, "One way to read JSON"): a
// problem is an error wrapping ErrDecode, never a guess. A Value that is not JSON (a NaN or infinite
// float, a string that is not UTF-8) is refused where it enters a State,
// an Effect or an Action, with ErrInvalidValue.
package value
