package testissuer

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The grant types and the token type the token endpoint knows.
const (
	GrantClientCredentials = "client_credentials"                              // RFC 6749 §4.4
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange" // RFC 8693 §2.1
	TokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"   // RFC 8693 §3
)

const tokenPath = "/token"

// Grant is one token the endpoint issued, as it was asked for.
type Grant struct {
	Type         string // GrantClientCredentials or GrantTokenExchange
	ClientID     string // the client that authenticated
	Subject      string // the issued token's sub
	SubjectToken string // the token exchanged (GrantTokenExchange)
	Audience     string
	Resource     string
	Scope        string
	Token        string // the access token issued
}

// tokenEndpoint is the Issuer's token endpoint's state; its zero value
// knows no client and grants tokens for an hour.
type tokenEndpoint struct {
	// TokenURL is the token endpoint.
	TokenURL string
	// Grants counts the tokens issued, Refusals the requests refused
	// (unknown clients and bad requests included).
	Grants, Refusals atomic.Int64

	mu       sync.Mutex
	clients  map[string]string // client id → secret
	refusal  *tokenError       // Refuse's
	lifetime time.Duration     // 0: an hour; <0: no expires_in
	delay    time.Duration
	given    []Grant
}

// tokenError is an RFC 6749 §5.2 error response.
type tokenError struct {
	status int
	Code   string `json:"error"`
	Desc   string `json:"error_description,omitempty"`
}

// AddClient lets the client id authenticate with secret, either in an
// HTTP Basic Authorization header (client_secret_basic, RFC 6749
// §2.3.1, each part form-encoded) or as the client_id and client_secret
// form parameters (client_secret_post).
func (is *Issuer) AddClient(id, secret string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.clients == nil {
		is.clients = map[string]string{}
	}
	is.clients[id] = secret
}

// Refuse makes the endpoint answer every authenticated grant request 400
// with the error code and description (RFC 6749 §5.2), until it is
// called with an empty code.
func (is *Issuer) Refuse(code, description string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if code == "" {
		is.refusal = nil
		return
	}
	is.refusal = &tokenError{status: http.StatusBadRequest, Code: code, Desc: description}
}

// SetLifetime sets the expires_in of the tokens issued from now on: an
// hour when 0; none at all (no expires_in member) when negative.
func (is *Issuer) SetLifetime(d time.Duration) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.lifetime = d
}

// SetDelay makes the endpoint wait d before answering each request, so
// that a test can have requests overlap.
func (is *Issuer) SetDelay(d time.Duration) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.delay = d
}

// Given returns the grants made so far, in order.
func (is *Issuer) Given() []Grant {
	is.mu.Lock()
	defer is.mu.Unlock()
	return append([]Grant(nil), is.given...)
}

// serveToken answers one token request (RFC 6749 §3.2).
func (is *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	is.mu.Lock()
	delay := is.delay
	is.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	g, lifetime, terr := is.grant(r)
	if terr != nil {
		is.Refusals.Add(1)
		if terr.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="testissuer"`)
		}
		writeJSON(w, terr.status, terr)
		return
	}
	resp := map[string]any{"access_token": g.Token, "token_type": "Bearer"}
	if lifetime > 0 {
		resp["expires_in"] = int64(lifetime / time.Second)
	}
	if g.Type == GrantTokenExchange {
		resp["issued_token_type"] = TokenTypeAccessToken
	}
	if g.Scope != "" {
		resp["scope"] = g.Scope
	}
	is.Grants.Add(1)
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func bad(status int, code, format string, args ...any) *tokenError {
	return &tokenError{status: status, Code: code, Desc: fmt.Sprintf(format, args...)}
}

// grant checks a token request and issues its token.
func (is *Issuer) grant(r *http.Request) (Grant, time.Duration, *tokenError) {
	if r.Method != http.MethodPost {
		return Grant{}, 0, bad(http.StatusMethodNotAllowed, "invalid_request", "POST only")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return Grant{}, 0, bad(http.StatusBadRequest, "invalid_request", "content type %q", ct)
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return Grant{}, 0, bad(http.StatusBadRequest, "invalid_request", "%v", err)
	}
	f := r.PostForm
	for k, vs := range f {
		if len(vs) > 1 {
			return Grant{}, 0, bad(http.StatusBadRequest, "invalid_request", "parameter %s given %d times", k, len(vs))
		}
	}
	client, terr := is.authenticate(r, f)
	if terr != nil {
		return Grant{}, 0, terr
	}
	is.mu.Lock()
	refusal, lifetime := is.refusal, is.lifetime
	is.mu.Unlock()
	if refusal != nil {
		return Grant{}, 0, refusal
	}
	if lifetime == 0 {
		lifetime = time.Hour
	}
	g := Grant{Type: f.Get("grant_type"), ClientID: client, Audience: f.Get("audience"), Resource: f.Get("resource"), Scope: f.Get("scope")}
	switch g.Type {
	case GrantClientCredentials:
		g.Subject = client
	case GrantTokenExchange:
		if f.Get("subject_token_type") != TokenTypeAccessToken {
			return Grant{}, 0, bad(http.StatusBadRequest, "invalid_request", "subject_token_type %q, want %s", f.Get("subject_token_type"), TokenTypeAccessToken)
		}
		if rt := f.Get("requested_token_type"); rt != "" && rt != TokenTypeAccessToken {
			return Grant{}, 0, bad(http.StatusBadRequest, "invalid_request", "requested_token_type %q", rt)
		}
		g.SubjectToken = f.Get("subject_token")
		sub, scope, err := is.subjectOf(g.SubjectToken)
		if err != nil {
			return Grant{}, 0, bad(http.StatusBadRequest, "invalid_grant", "subject token: %v", err)
		}
		g.Subject = sub
		g.Scope = narrowed(g.Scope, scope)
	default:
		return Grant{}, 0, bad(http.StatusBadRequest, "unsupported_grant_type", "grant_type %q", g.Type)
	}
	aud := is.Audience
	switch {
	case g.Audience != "":
		aud = g.Audience
	case g.Resource != "":
		aud = g.Resource
	}
	now := time.Now()
	jti := make([]byte, 8)
	_, _ = rand.Read(jti)
	claims := jwt.MapClaims{"iss": is.URL, "aud": aud, "sub": g.Subject, "client_id": client,
		"iat": now.Unix(), "jti": hex.EncodeToString(jti)}
	if lifetime > 0 {
		claims["exp"] = now.Add(lifetime).Unix()
	} else {
		claims["exp"] = now.Add(time.Hour).Unix()
	}
	if g.Scope != "" {
		claims["scope"] = g.Scope
	}
	if g.Type == GrantTokenExchange {
		claims["act"] = map[string]any{"sub": client} // RFC 8693 §4.1
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = Kid("RS256")
	s, err := tok.SignedString(is.keys["RS256"])
	if err != nil {
		return Grant{}, 0, bad(http.StatusInternalServerError, "server_error", "%v", err)
	}
	g.Token = s
	is.mu.Lock()
	is.given = append(is.given, g)
	is.mu.Unlock()
	return g, lifetime, nil
}

// authenticate finds the client of a request: Basic or form
// credentials, exactly one of the two, of a known client.
func (is *Issuer) authenticate(r *http.Request, f url.Values) (string, *tokenError) {
	var id, secret string
	basic := r.Header.Get("Authorization")
	switch {
	case basic != "" && (f.Has("client_id") || f.Has("client_secret")):
		return "", bad(http.StatusBadRequest, "invalid_request", "client credentials given twice")
	case basic != "":
		raw, ok := strings.CutPrefix(basic, "Basic ")
		b, err := base64.StdEncoding.DecodeString(raw)
		if !ok || err != nil {
			return "", bad(http.StatusUnauthorized, "invalid_client", "malformed Basic credentials")
		}
		eid, esecret, ok := strings.Cut(string(b), ":")
		if !ok {
			return "", bad(http.StatusUnauthorized, "invalid_client", "malformed Basic credentials")
		}
		id, _ = url.QueryUnescape(eid)
		secret, _ = url.QueryUnescape(esecret)
	default:
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	is.mu.Lock()
	want, ok := is.clients[id]
	is.mu.Unlock()
	if id == "" || !ok || want != secret {
		return "", bad(http.StatusUnauthorized, "invalid_client", "client authentication failed")
	}
	return id, nil
}

// subjectOf verifies a token the issuer signed and returns its subject
// and scope.
func (is *Issuer) subjectOf(token string) (string, string, error) {
	if token == "" {
		return "", "", fmt.Errorf("missing")
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		for _, alg := range Algs {
			if t.Header["kid"] == Kid(alg) && t.Method.Alg() == alg {
				return is.keys[alg].Public(), nil
			}
		}
		return nil, fmt.Errorf("unknown key")
	}, jwt.WithValidMethods(Algs), jwt.WithIssuer(is.URL), jwt.WithExpirationRequired())
	if err != nil {
		return "", "", err
	}
	sub, _ := claims["sub"].(string)
	scope, _ := claims["scope"].(string)
	if sub == "" {
		return "", "", fmt.Errorf("no subject")
	}
	return sub, scope, nil
}

// narrowed is the scope of an exchanged token: the subject token's, or,
// when scopes are requested, those of them the subject token has.
func narrowed(requested, subject string) string {
	if requested == "" {
		return subject
	}
	have := strings.Fields(subject)
	var out []string
	for _, s := range strings.Fields(requested) {
		if slices.Contains(have, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}
