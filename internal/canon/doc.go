// Package canon implements RFC 8785, the JSON Canonicalization Scheme (JCS):
// the one byte form of a JSON value that every hash in Verity is taken over,
// and the rules of strict JSON that internal/strictjson, the reader behind
// Verity's decoders, enforces by reading with this package's Scanner.
//
// # Usage
//
//	b, err := canon.Marshal(record)          // a Go value → canonical bytes
//	b, err = canon.Transform([]byte(`{ "b": 1.50, "a": [1e3] }`)) // → {"a":[1000],"b":1.5}
//	err = canon.Valid(b)                      // nil iff b is already canonical
//	b, err = canon.Canonical(input)           // input itself when canonical, else Transform
//
//	var rec Record
//	err = canon.DecodeInto(data, &rec, true)  // strict: unknown fields refused too
//	tree, err := canon.Decode(data)           // map[string]any, numbers as json.Number
//
// A writer hashes what Marshal, Transform or Canonical return; a verifier
// checks stored bytes with Valid; a decoder reads untrusted JSON with
// Decode or DecodeInto, which refuse whatever canonical JSON refuses
// (duplicate keys, bad UTF-8, rounded integers, too deep) before
// encoding/json sees it.
//
// # Reading JSON on one's own
//
// Scanner is the lexer behind Transform: it reads the tokens of a text
// (strings unescaped, number literals as written, literals, the brackets
// of objects and arrays, the depth) and applies every rule below but the
// duplicate keys, which its caller finds since only the caller keeps the
// keys. internal/strictjson reads with it too, so strict JSON's rules are
// written once; the one-pass canonical check (Valid, Canonical) shares its
// UTF-8, number grammar and hex rules and adds canonical form's own.
//
// # What canonical means
//
// Transform parses a JSON text and writes it back with no whitespace, object
// members sorted by the UTF-16 code units of their keys, numbers in the
// ECMAScript Number.prototype.toString form (1E30 → 1e+30, 4.50 → 4.5,
// -0 → 0) and strings with the minimal escaping of RFC 8785 §3.2.2.2 (only
// '"', '\\' and control characters; "<", "/" and non-ASCII stay literal).
// Marshal does the same for Go values without ever going through
// encoding/json's HTML escaping.
//
// # What is rejected
//
// Every rejection is a *SyntaxError carrying the byte offset and one of the
// sentinel errors (test with errors.Is):
//
//   - ErrSyntax: anything that is not a single JSON text (RFC 8259);
//   - ErrDuplicateKey: two members of one object with the same key, after
//     unescaping ("a" and "\u0061" are the same key);
//   - ErrLoneSurrogate: a \uD800–\uDFFF escape that is not half of a pair;
//   - ErrInvalidUTF8: raw bytes that are not UTF-8;
//   - ErrNonFinite: a number that overflows a double (1e400);
//   - ErrTooDeep: arrays/objects nested more than MaxDepth (512) levels;
//   - ErrUnsafeInteger: an integer literal (no fraction, no exponent) that
//     a double would round: one whose value is not exactly a double and
//     that is not a double's canonical text either (9007199254740993,
//     12345678901234567891). A reader that parses numbers as doubles would
//     take it for a different number than its digits say, so a hash over
//     the canonical text would cover a number the producer did not write;
//     send such values as decimal strings.
//
// An integer literal that is exactly a double is accepted and written as
// RFC 8785 writes that double: 9007199254740992 stays as it is,
// 1000000000000000000000 becomes 1e+21 and 1152921504606846976 (2^60)
// becomes 1152921504606847000, the shortest digits that read back as 2^60.
// Such a canonical text is accepted in turn, although its digits are not
// the double's exact value, so that every text Transform writes, Transform
// accepts again, and every double has its one RFC 8785 form. Numbers
// written with a fraction or an exponent are IEEE-754 doubles as
// RFC 8785 says. A value whose integers must survive exactly beyond
// MaxSafeInteger (2^53−1) carries them as strings.
package canon
