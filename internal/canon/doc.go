// Package canon implements RFC 8785, the JSON Canonicalization Scheme (JCS):
// the one byte form of a JSON value that every hash in Verity is taken over.
//
// # What canonical means
//
// Transform parses a JSON text and writes it back with no whitespace, object
// members sorted by the UTF-16 code units of their keys, numbers in the
// ECMAScript Number.prototype.toString form (1E30 → 1e+30, 4.50 → 4.5,
// -0 → 0) and strings with the minimal escaping of RFC 8785 §3.2.2.2 (only
// '"', '\\' and control characters; "<", "/" and non-ASCII stay literal).
// Marshal does the same for Go values without ever going through
// encoding/json's HTML escaping. Valid reports whether bytes are already
// canonical, which is what a verifier needs.
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
//   - ErrUnsafeInteger: an integer literal (no fraction, no exponent) whose
//     magnitude exceeds 2^53−1. A double cannot hold it exactly, so a hash
//     over the canonical text would cover a different number than the
//     producer wrote; send such values as decimal strings. For the same
//     reason a number whose canonical text would be such a literal (an
//     integral value from 2^53 up to 1e21, say 1.5e20) is refused, so that
//     everything Transform writes, Transform accepts again.
//
// Numbers written with a fraction or an exponent are IEEE-754 doubles as
// RFC 8785 says. The package is tested against the public RFC 8785 vectors
// in testdata/jcs and fuzzed for: no panics, valid output, idempotence, and
// never accepting what encoding/json rejects.
package canon
