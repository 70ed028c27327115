package bearer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// MaxTokenBytes is the longest token read; a longer one is refused
// before it is decoded.
const MaxTokenBytes = 16 << 10

// DefaultLeeway is the clock skew allowed on exp and nbf by default.
const DefaultLeeway = 30 * time.Second

// Config is what a Verifier accepts.
type Config struct {
	// Issuer is the exact "iss" a token must carry (required).
	Issuer string
	// Audience must be one of the token's "aud" values (required): the
	// resource's own identifier, so that a token issued for another
	// resource is refused (RFC 8707, RFC 9068 §4).
	Audience string
	// Keys are the issuer's verification keys (required).
	Keys *KeySet
	// Leeway is the clock skew allowed on exp and nbf (DefaultLeeway
	// when zero; at most 5 minutes).
	Leeway time.Duration
	// GroupsClaim names the claim that holds the principal's groups, a
	// string array or one string (none when empty).
	GroupsClaim string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Logger receives, at debug level, why a token was refused: the
	// reason is never told to the client.
	Logger *slog.Logger
}

// Verifier checks bearer tokens: JWTs (RFC 7519) signed with RS256,
// ES256 or EdDSA by a key of its KeySet. It is safe for concurrent use.
type Verifier struct {
	cfg    Config
	parser *jwt.Parser
	logger *slog.Logger
}

// Error is why a token was refused. It unwraps to auth.ErrInvalidToken.
type Error struct{ Reason string }

func (e *Error) Error() string { return "invalid token: " + e.Reason }

// Unwrap makes an Error an auth.ErrInvalidToken.
func (e *Error) Unwrap() error { return auth.ErrInvalidToken }

func refuse(format string, args ...any) error {
	return &Error{Reason: fmt.Sprintf(format, args...)}
}

// NewVerifier returns a Verifier for cfg.
func NewVerifier(cfg Config) (*Verifier, error) {
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("bearer: the issuer is required")
	case cfg.Audience == "":
		return nil, errors.New("bearer: the audience is required")
	case cfg.Keys == nil:
		return nil, errors.New("bearer: the keys are required")
	case cfg.Leeway < 0 || cfg.Leeway > 5*time.Minute:
		return nil, fmt.Errorf("bearer: leeway %v out of [0, 5m]", cfg.Leeway)
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The parser accepts only the three asymmetric algorithms: "none" and
	// HS256/384/512 are refused before any key is looked up
	// (jwt.WithValidMethods), and keyFunc further requires the algorithm
	// the key's type implies.
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256", "ES256", "EdDSA"}),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	)
	return &Verifier{cfg: cfg, parser: p, logger: logger}, nil
}

// Verify checks token and returns what the MCP SDK and the gate read of
// it: UserID the subject, Scopes the "scope" claim (space-separated,
// RFC 9068) or else an "scp" array, Expiration the "exp", and Extra
// "iss" (string) and "groups" ([]string, from Config.GroupsClaim). A
// refused token's error is an *Error.
func (v *Verifier) Verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	if len(token) > MaxTokenBytes {
		return nil, refuse("longer than %d bytes", MaxTokenBytes)
	}
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if err := understood(t.Header); err != nil {
			return nil, err
		}
		kid, _ := t.Header["kid"].(string)
		if _, ok := t.Header["kid"]; ok && kid == "" {
			return nil, errors.New("kid is not a non-empty string")
		}
		k, ok := v.cfg.Keys.Lookup(ctx, kid)
		if !ok {
			return nil, fmt.Errorf("no key %q", kid)
		}
		if t.Method.Alg() != k.Alg {
			return nil, fmt.Errorf("alg %s with a key for %s", t.Method.Alg(), k.Alg)
		}
		return k.Public, nil
	})
	if err != nil {
		return nil, refuse("%v", err)
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return nil, refuse("no subject")
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return nil, refuse("no expiration")
	}
	scopes, err := scopesOf(claims)
	if err != nil {
		return nil, err
	}
	extra := map[string]any{"iss": v.cfg.Issuer}
	if v.cfg.GroupsClaim != "" {
		groups, err := stringsOf(claims[v.cfg.GroupsClaim])
		if err != nil {
			return nil, refuse("claim %q: %v", v.cfg.GroupsClaim, err)
		}
		if groups != nil {
			extra["groups"] = groups
		}
	}
	return &auth.TokenInfo{Scopes: scopes, Expiration: exp.Time, UserID: sub, Extra: extra}, nil
}

// understood refuses a header that asks for what the verifier does not
// implement. It implements no JWS extension, so a "crit" member, whatever
// it lists (RFC 7515 §4.1.11: a recipient that does not understand a
// listed extension must refuse the JWS, and an empty list is itself
// invalid), refuses the token; so does "b64" other than true (RFC 7797:
// an unencoded payload the parser would read as encoded).
func understood(h map[string]any) error {
	if c, ok := h["crit"]; ok {
		names, _ := c.([]any)
		if len(names) == 0 {
			return errors.New(`the "crit" header is not a non-empty list`)
		}
		return fmt.Errorf(`the "crit" header lists %v, an extension this verifier does not implement`, names)
	}
	if b, ok := h["b64"]; ok && b != true {
		return errors.New(`the "b64" header is not true: unencoded payloads are not accepted`)
	}
	return nil
}

func scopesOf(claims jwt.MapClaims) ([]string, error) {
	if s, ok := claims["scope"]; ok {
		str, ok := s.(string)
		if !ok {
			return nil, refuse(`"scope" is not a string`)
		}
		return strings.Fields(str), nil
	}
	if s, ok := claims["scp"]; ok {
		scopes, err := stringsOf(s)
		if err != nil {
			return nil, refuse(`"scp": %v`, err)
		}
		return scopes, nil
	}
	return nil, nil
}

// stringsOf reads a claim that is a string array or one string.
func stringsOf(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, errors.New("not an array of strings")
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, errors.New("not a string or an array of strings")
	}
}

// TokenVerifier is v as the SDK's auth.TokenVerifier (go-sdk v1.8.0,
// auth/auth.go: "type TokenVerifier func(ctx context.Context, token
// string, req *http.Request) (*TokenInfo, error)"), for
// auth.RequireBearerToken. Its error is auth.ErrInvalidToken itself,
// whatever the reason: RequireBearerToken writes the error's text in
// the 401's body, and the reason (logged at debug level) is not the
// client's to read.
func (v *Verifier) TokenVerifier() auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		ti, err := v.Verify(ctx, token)
		if err != nil {
			v.logger.Debug("bearer token refused", "reason", err.Error())
			return nil, auth.ErrInvalidToken
		}
		return ti, nil
	}
}

// HasScopes reports whether ti carries every scope in required.
func HasScopes(ti *auth.TokenInfo, required []string) bool {
	for _, s := range required {
		if !slices.Contains(ti.Scopes, s) {
			return false
		}
	}
	return true
}
