// Package violation is the one vocabulary in which every Verity validator
// reports what is wrong with a value: claims bundles, contracts documents,
// speculative evidence and specs, belief requests.
//
// A Violation is one broken rule, located by an RFC 6901 JSON Pointer into
// the value ("" for the value itself, "/claims/2/evidence_hash" for a
// member), with a stable rule name callers may branch on and a sentence for
// people. A *ValidationError carries every violation found in one value,
// sorted one way everywhere (Compare), and wraps the sentinel errors its
// package names, so errors.Is and errors.As work the same in every package:
//
//	var ve *claims.ValidationError // the same type as contracts.ValidationError
//	if errors.As(err, &ve) {
//		for _, v := range ve.Violations {
//			fmt.Println(v.Path, v.Rule, v.Message)
//		}
//	}
//
// The public packages re-export the two types under their own names
// (claims.Violation, contracts.ValidationError, …); this package only holds
// the shared implementation.
package violation
