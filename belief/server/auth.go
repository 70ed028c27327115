package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/osfile"
)

// Principal is an authenticated caller. Issuer is empty for a principal
// of a token file and the token issuer for one of a signed token; an
// Authenticator never returns an Issuer holding white space.
type Principal struct {
	Issuer  string
	Subject string
	Groups  []string
}

// Key is the principal's identity as a session records it as its owner:
// the subject alone when Issuer is empty, else "ISSUER SUBJECT".
func (p Principal) Key() string {
	if p.Issuer == "" {
		return p.Subject
	}
	return p.Issuer + " " + p.Subject
}

// ErrUnauthenticated is what an Authenticator returns (wrapped or not)
// for a request without valid credentials; the Handler answers it 401
// UNAUTHENTICATED with WWW-Authenticate: Bearer and nothing more.
var ErrUnauthenticated = errors.New("server: unauthenticated")

// CodeUnauthenticated answers a request without valid credentials.
const CodeUnauthenticated belief.Code = "UNAUTHENTICATED"

// Authenticator finds the principal behind a request. Any error refuses
// the request with 401; the error is logged, never sent.
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

// WithAuthenticator makes every request authenticate with a and every
// session belong to the principal that declared it: any other principal
// is answered 404 SESSION_NOT_FOUND on each of its routes, exactly as
// for a session that does not exist. Without it requests are anonymous,
// and only sessions declared without an owner are served.
func WithAuthenticator(a Authenticator) Option { return func(h *Handler) { h.auth = a } }

type principalKey struct{}

// PrincipalFrom returns the principal the Handler authenticated for the
// request of ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(r *http.Request) (string, bool) {
	v := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	tok := strings.TrimSpace(v[len(scheme):])
	return tok, tok != ""
}

// TokenFile authenticates static bearer tokens against the SHA-256
// digests of a token file (ParseTokenFile). It holds no token, only
// digests; a request's token is hashed and compared with every digest in
// constant time, so the time taken tells nothing about which digest came
// close.
type TokenFile struct {
	entries []tokenEntry
}

type tokenEntry struct {
	digest [sha256.Size]byte
	p      Principal
}

// MaxTokenFileBytes bounds a token file.
const MaxTokenFileBytes = 1 << 20

// maxTokenBytes bounds a bearer token: a longer one is refused unhashed.
const maxTokenBytes = 4096

// TokenFileError is a malformed token file: the first bad line (1-based)
// and why.
type TokenFileError struct {
	Line   int
	Reason string
}

func (e *TokenFileError) Error() string {
	return fmt.Sprintf("token file line %d: %s", e.Line, e.Reason)
}

// ParseTokenFile reads a token file. Each line is blank, a comment
// (starting with #), or
//
//	sha256:HEX SUBJECT [GROUP,GROUP...]
//
// fields separated by spaces or tabs: HEX the 64 lower- or upper-case hex
// digits of the SHA-256 of a token, SUBJECT the principal it stands for,
// GROUPs the principal's groups (non-empty, comma-separated). Subjects
// may repeat (one principal, several tokens); a digest may not, nor may a
// file declare no token. Anything else is a *TokenFileError naming the
// line. Generate a line with
//
//	printf %s "$TOKEN" | sha256sum | awk '{print "sha256:" $1 " alice"}'
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTokenFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxTokenFileBytes {
		return nil, fmt.Errorf("token file exceeds %d bytes", MaxTokenFileBytes)
	}
	tf := &TokenFile{}
	seen := map[[sha256.Size]byte]int{}
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		l, data, _ = bytes.Cut(data, []byte("\n"))
		l = bytes.TrimSuffix(l, []byte("\r"))
		bad := func(format string, args ...any) (*TokenFile, error) {
			return nil, &TokenFileError{Line: line, Reason: fmt.Sprintf(format, args...)}
		}
		if !utf8.Valid(l) {
			return bad("not valid UTF-8")
		}
		s := strings.TrimSpace(string(l))
		if s == "" || s[0] == '#' {
			continue
		}
		f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) < 2 || len(f) > 3 {
			return bad("want sha256:HEX SUBJECT [GROUP,...], got %d fields", len(f))
		}
		hexd, ok := strings.CutPrefix(f[0], "sha256:")
		if !ok {
			return bad("the digest must start with sha256:")
		}
		var e tokenEntry
		if len(hexd) != 2*sha256.Size {
			return bad("the digest must be %d hex digits", 2*sha256.Size)
		}
		if _, err := hex.Decode(e.digest[:], []byte(hexd)); err != nil {
			return bad("the digest must be %d hex digits", 2*sha256.Size)
		}
		if prev, dup := seen[e.digest]; dup {
			return bad("the digest of line %d again", prev)
		}
		seen[e.digest] = line
		if !printable(f[1]) {
			return bad("the subject holds a space or a control character")
		}
		e.p.Subject = f[1]
		if len(f) == 3 {
			for g := range strings.SplitSeq(f[2], ",") {
				if g == "" {
					return bad("an empty group")
				}
				if !printable(g) {
					return bad("a group holds a space or a control character")
				}
				e.p.Groups = append(e.p.Groups, g)
			}
		}
		tf.entries = append(tf.entries, e)
	}
	if len(tf.entries) == 0 {
		return nil, &TokenFileError{Line: line, Reason: "no token"}
	}
	return tf, nil
}

// printable reports whether s holds no white space and no control
// character (Unicode's definitions).
func printable(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) < 0
}

// LoadTokenFile reads the token file at path (ParseTokenFile). Anything
// but a regular file (a FIFO, a device, a directory) is refused without
// waiting on it, and a file over MaxTokenFileBytes without reading it
// whole.
func LoadTokenFile(path string) (*TokenFile, error) {
	data, err := osfile.ReadFile(path, MaxTokenFileBytes)
	if err != nil {
		return nil, err
	}
	tf, err := ParseTokenFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tf, nil
}

// Len returns the number of tokens the file declares.
func (tf *TokenFile) Len() int { return len(tf.entries) }

// Authenticate implements Authenticator for "Authorization: Bearer
// TOKEN": the principal whose digest is SHA-256(TOKEN), or
// ErrUnauthenticated. Every digest is compared, whichever matches.
func (tf *TokenFile) Authenticate(r *http.Request) (Principal, error) {
	tok, ok := bearer(r)
	if !ok || len(tok) > maxTokenBytes {
		return Principal{}, ErrUnauthenticated
	}
	d := sha256.Sum256([]byte(tok))
	found := -1
	for i := range tf.entries {
		if subtle.ConstantTimeCompare(d[:], tf.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, ErrUnauthenticated
	}
	return tf.entries[found].p, nil
}

// authenticate runs h.auth on r: the request with the principal in its
// context, or false after answering 401.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if h.auth == nil {
		return r, true
	}
	p, err := h.auth.Authenticate(r)
	if err != nil {
		if !errors.Is(err, ErrUnauthenticated) {
			h.log.Warn("authentication failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="verity"`)
		writeError(w, http.StatusUnauthorized, CodeUnauthenticated, "authentication required", nil)
		return nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p)), true
}

// owner is the owner a session declared by r's caller records: its
// principal's Key, or "" without authentication.
func owner(r *http.Request) string {
	p, ok := PrincipalFrom(r.Context())
	if !ok {
		return ""
	}
	return p.Key()
}

// notFound is the answer for a session that does not exist, and for one
// that belongs to someone else: the same, so that it tells nothing.
func notFound(id string) error {
	return &belief.Error{Err: belief.ErrSessionNotFound, Message: fmt.Sprintf("no session %q", id)}
}
