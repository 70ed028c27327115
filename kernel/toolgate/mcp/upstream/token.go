//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/strictjson"
)

// ErrCredential is what every failure of an upstream's credentials
// wraps: the token endpoint refused the grant or the exchange, did not
// answer, or answered something that is not a token; a call needs the
// caller's token and has none (a *CredentialError: the request was never
// sent); or the upstream answered a POST 401 or 403 (it refused the
// credentials and did not act on the request).
var ErrCredential = errors.New("upstream: the upstream's credentials could not be had or were refused")

// The grant types and token types of the requests this package makes.
const (
	grantClientCredentials = "client_credentials"                              // RFC 6749 §4.4.2
	grantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange" // RFC 8693 §2.1
	tokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"   // RFC 8693 §3
	tokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"            // RFC 8693 §3
)

// Bounds on what a token endpoint may answer.
const (
	maxTokenResponse = 64 << 10        // bytes of a response body read
	maxAccessToken   = 16 << 10        // bytes of an access token
	maxExpiresIn     = 366 * 24 * 3600 // seconds: a year and a day
	maxErrorText     = 200             // bytes of an error code or description shown
)

// CredentialError is a failure to get an upstream's credentials. It
// wraps ErrCredential and, when there is one, the cause.
type CredentialError struct {
	// Server names the upstream (gateway.Server.Name).
	Server string
	// Kind is the grant asked for: "client_credentials" or
	// "token_exchange".
	Kind string
	// TokenURL is the token endpoint asked.
	TokenURL string
	// Status is the token endpoint's HTTP status, 0 when it did not
	// answer.
	Status int
	// Code and Description are the token endpoint's error and
	// error_description (RFC 6749 §5.2), made printable and cut to 200
	// bytes; empty when it sent none.
	Code, Description string
	// Err is the cause when there is no Code: the request failed, or
	// the answer was not a token.
	Err error
}

func (e *CredentialError) Error() string {
	what := "the client credentials grant"
	if e.Kind == "token_exchange" {
		what = "the token exchange"
	}
	s := fmt.Sprintf("upstream %q: %s at %s", e.Server, what, e.TokenURL)
	switch {
	case e.Code != "":
		s += " was refused: " + e.Code
		if e.Description != "" {
			s += ": " + e.Description
		}
	case e.Err != nil:
		s += " failed: " + e.Err.Error()
	default:
		s += fmt.Sprintf(" failed: HTTP %d", e.Status)
	}
	return s
}

// Unwrap returns ErrCredential and the cause.
func (e *CredentialError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCredential}
	}
	return []error{ErrCredential, e.Err}
}

// token is an access token and how long it may be used.
type token struct {
	value string
	// life is expires_in; 0 when the endpoint gave none (the token is
	// then used for the one request it was fetched for, never cached).
	life time.Duration
}

// tokenResponse is a successful token response (RFC 6749 §5.1, RFC 8693
// §2.2.1). Members it does not name (refresh_token, id_token, …) are
// read strictly and ignored.
type tokenResponse struct {
	AccessToken     string     `json:"access_token"`
	TokenType       string     `json:"token_type"`
	ExpiresIn       *expiresIn `json:"expires_in,optional"`
	IssuedTokenType string     `json:"issued_token_type,optional"`
	Scope           string     `json:"scope,optional"`
}

// errorResponse is an error response (RFC 6749 §5.2).
type errorResponse struct {
	Error       string `json:"error"`
	Description string `json:"error_description,optional"`
	URI         string `json:"error_uri,optional"`
}

// expiresIn is expires_in: an integer number of seconds, as RFC 6749
// has it, or the same as a decimal string, as some servers send it.
type expiresIn int64

func (e *expiresIn) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		s = str
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("expires_in %.20q is not an integer number of seconds", s)
	}
	*e = expiresIn(n)
	return nil
}

// decodeTokenResponse reads a token endpoint's answer: status and body
// (at most maxTokenResponse bytes). A 200 must be a token response whose
// access_token is 1 to 16 KiB of visible ASCII (it becomes a header
// value), whose token_type is Bearer, whose expires_in, when present, is
// 1 s to a year, and, for an exchange, whose issued_token_type is an
// access token or a JWT. Any other status is a refusal: a
// *CredentialError with the error response's code and description, or
// with the status alone when the body is not one.
func decodeTokenResponse(status int, body []byte, exchange bool) (token, error) {
	if status != http.StatusOK {
		var er errorResponse
		if err := (strictjson.Options{AllowUnknown: true}).Unmarshal(body, &er); err == nil && er.Error != "" {
			return token{}, &CredentialError{Status: status, Code: printable(er.Error), Description: printable(er.Description)}
		}
		return token{}, &CredentialError{Status: status}
	}
	var tr tokenResponse
	if err := (strictjson.Options{AllowUnknown: true}).Unmarshal(body, &tr); err != nil {
		return token{}, &CredentialError{Status: status, Err: fmt.Errorf("not a token response: %w", err)}
	}
	bad := func(format string, args ...any) (token, error) {
		return token{}, &CredentialError{Status: status, Err: fmt.Errorf("not a usable token: "+format, args...)}
	}
	switch {
	case tr.AccessToken == "" || len(tr.AccessToken) > maxAccessToken:
		return bad("access_token of %d bytes, want 1 to %d", len(tr.AccessToken), maxAccessToken)
	case strings.ContainsFunc(tr.AccessToken, func(r rune) bool { return r < 0x21 || r > 0x7e }):
		return bad("access_token has a character other than visible ASCII")
	case !strings.EqualFold(tr.TokenType, "bearer"):
		return bad("token_type %s, want Bearer", quoted(tr.TokenType))
	case tr.ExpiresIn != nil && (*tr.ExpiresIn < 1 || *tr.ExpiresIn > maxExpiresIn):
		return bad("expires_in %d, want 1 to %d seconds", int64(*tr.ExpiresIn), maxExpiresIn)
	case exchange && tr.IssuedTokenType != tokenTypeAccessToken && tr.IssuedTokenType != tokenTypeJWT:
		return bad("issued_token_type %s, want %s or %s", quoted(tr.IssuedTokenType), tokenTypeAccessToken, tokenTypeJWT)
	}
	t := token{value: tr.AccessToken}
	if tr.ExpiresIn != nil {
		t.life = time.Duration(*tr.ExpiresIn) * time.Second
	}
	return t, nil
}

// printable is s with every byte outside printable ASCII replaced by
// "?", cut to maxErrorText bytes: a token endpoint's words in one line.
func printable(s string) string {
	cut := len(s) > maxErrorText
	if cut {
		s = s[:maxErrorText]
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	if cut {
		return string(b) + "..."
	}
	return string(b)
}

func quoted(s string) string { return strconv.Quote(printable(s)) }

// endpoint is a token endpoint and the gateway's client there.
type endpoint struct {
	server   string // the upstream's name
	url      string
	clientID string
	secret   string
	scopes   []string
	audience string
	resource string
	hc       *http.Client
}

// clientCredentials asks for a token as the gateway's client (RFC 6749
// §4.4.2), with the scopes, audience and resource configured.
func (e *endpoint) clientCredentials(ctx context.Context) (token, error) {
	f := url.Values{"grant_type": {grantClientCredentials}}
	e.common(f)
	return e.ask(ctx, f, false)
}

// exchange exchanges the caller's token for one for the upstream (RFC
// 8693 §2.1).
func (e *endpoint) exchange(ctx context.Context, subject string) (token, error) {
	f := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {subject},
		"subject_token_type":   {tokenTypeAccessToken},
		"requested_token_type": {tokenTypeAccessToken},
	}
	e.common(f)
	return e.ask(ctx, f, true)
}

func (e *endpoint) common(f url.Values) {
	if len(e.scopes) > 0 {
		f.Set("scope", strings.Join(e.scopes, " "))
	}
	if e.audience != "" {
		f.Set("audience", e.audience)
	}
	if e.resource != "" {
		f.Set("resource", e.resource) // RFC 8707
	}
}

// ask posts a token request, the client authenticating with HTTP Basic
// (client_secret_basic, RFC 6749 §2.3.1: id and secret form-encoded
// first), and reads the answer.
func (e *endpoint) ask(ctx context.Context, f url.Values, exchange bool) (token, error) {
	t, err := e.post(ctx, f, exchange)
	return t, e.failed(err, exchange)
}

func (e *endpoint) post(ctx context.Context, f url.Values, exchange bool) (token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(f.Encode()))
	if err != nil {
		return token{}, &CredentialError{Err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(e.clientID), url.QueryEscape(e.secret))
	resp, err := e.hc.Do(req)
	if err != nil {
		return token{}, &CredentialError{Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil {
		return token{}, &CredentialError{Status: resp.StatusCode, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if len(body) > maxTokenResponse {
		return token{}, &CredentialError{Status: resp.StatusCode, Err: fmt.Errorf("an answer over %d bytes", maxTokenResponse)}
	}
	t, err := decodeTokenResponse(resp.StatusCode, body, exchange)
	if err != nil {
		return token{}, err
	}
	return t, nil
}

// failed names the upstream, grant and endpoint in a *CredentialError.
func (e *endpoint) failed(err error, exchange bool) error {
	var ce *CredentialError
	if errors.As(err, &ce) {
		ce.Server, ce.Kind, ce.TokenURL = e.server, "client_credentials", e.url
		if exchange {
			ce.Kind = "token_exchange"
		}
	}
	return err
}
