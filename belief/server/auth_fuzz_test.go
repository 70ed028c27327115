package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// FuzzParseTokenFile feeds arbitrary files to ParseTokenFile: it never
// panics; a refusal is a *TokenFileError naming a line of the file (or
// the size limit); an accepted file declares at least one token, every
// subject and group is non-empty and free of spaces and control
// characters, and the file written back from what was parsed parses to
// the same principals, each of which its own token (a preimage is
// unknown, so the check runs with a digest line added for a known
// token) authenticates.
func FuzzParseTokenFile(f *testing.F) {
	d := sha256.Sum256([]byte("t"))
	hexd := hex.EncodeToString(d[:])
	for _, s := range []string{
		"sha256:" + hexd + " alice\n",
		"# c\n\nsha256:" + strings.ToUpper(hexd) + "\talice\tops,dev\r\n",
		"sha256:" + hexd + " alice\nsha256:" + hexd + " bob\n",
		"sha256:" + hexd[:10] + " alice",
		"sha256:" + hexd + " a b c d",
		"sha256:" + hexd + " alice ,",
		"md5:" + hexd + " alice",
		"", "#", "\n\n\n", "sha256:", "\xff", "sha256:" + hexd + " \x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		tf, err := ParseTokenFile(bytes.NewReader(file))
		if err != nil {
			var te *TokenFileError
			if errors.As(err, &te) {
				if lines := bytes.Count(file, []byte("\n")) + 1; te.Line < 0 || te.Line > lines {
					t.Fatalf("line %d of a file of %d lines: %v", te.Line, lines, err)
				}
			} else if len(file) <= MaxTokenFileBytes {
				t.Fatalf("not a *TokenFileError: %v", err)
			}
			return
		}
		if tf.Len() == 0 {
			t.Fatal("a file without a token was accepted")
		}
		clean := func(s string) bool {
			return s != "" && strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) < 0
		}
		var again strings.Builder
		for _, e := range tf.entries {
			if !clean(e.p.Subject) {
				t.Fatalf("subject %q", e.p.Subject)
			}
			for _, g := range e.p.Groups {
				if !clean(g) || strings.Contains(g, ",") {
					t.Fatalf("group %q", g)
				}
			}
			again.WriteString("sha256:" + hex.EncodeToString(e.digest[:]) + " " + e.p.Subject)
			if len(e.p.Groups) > 0 {
				again.WriteString(" " + strings.Join(e.p.Groups, ","))
			}
			again.WriteString("\n")
		}
		known := sha256.Sum256([]byte("fuzz-known-token"))
		if _, dup := indexOf(tf, known); !dup {
			again.WriteString("sha256:" + hex.EncodeToString(known[:]) + " known\n")
		}
		tf2, err := ParseTokenFile(strings.NewReader(again.String()))
		if err != nil {
			t.Fatalf("the file written back does not parse: %v\n%s", err, again.String())
		}
		for i, e := range tf.entries {
			e2 := tf2.entries[i]
			if e.digest != e2.digest || e.p.Subject != e2.p.Subject || strings.Join(e.p.Groups, ",") != strings.Join(e2.p.Groups, ",") {
				t.Fatalf("entry %d: %+v, written back %+v", i, e, e2)
			}
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", "Bearer fuzz-known-token")
		p, err := tf2.Authenticate(req)
		i, _ := indexOf(tf2, known)
		if err != nil || p.Subject != tf2.entries[i].p.Subject {
			t.Fatalf("the known token: %+v, %v", p, err)
		}
	})
}

func indexOf(tf *TokenFile, d [sha256.Size]byte) (int, bool) {
	for i, e := range tf.entries {
		if e.digest == d {
			return i, true
		}
	}
	return -1, false
}
