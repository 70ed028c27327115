package sqlbudget

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidID: the id guard never panics and accepts exactly 1..MaxIDLen
// bytes of valid UTF-8 without NUL (what both databases store as text).
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"", "a", "session/1", "é", "\x00", "\xff", strings.Repeat("x", MaxIDLen), strings.Repeat("x", MaxIDLen+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := validID("id", id)
		want := len(id) >= 1 && len(id) <= MaxIDLen && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
		if (err == nil) != want {
			t.Fatalf("validID(%q) = %v, want ok = %v", id, err, want)
		}
		if err != nil && !errors.Is(err, ErrInvalidID) {
			t.Fatalf("validID(%q) = %v, not ErrInvalidID", id, err)
		}
	})
}
