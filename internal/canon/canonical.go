package canon

// Canonical returns b itself when it is already canonical (checked in one
// pass, no allocation) and Transform(b) otherwise. Writers that accept any
// JSON text but usually receive canonical bytes use it to skip the copy.
// The result aliases b in the first case: copy it before keeping it if b
// may change.
func Canonical(b []byte) ([]byte, error) {
	if isCanonical(b) {
		return b, nil
	}
	return Transform(b)
}
