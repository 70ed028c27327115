package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// The auth kinds of gateway.Auth.
const (
	kindHeader            = "header"
	kindClientCredentials = "client_credentials"
	kindTokenExchange     = "token_exchange"
)

// errNoCallerToken: a token_exchange upstream's request on a caller's
// behalf carries no caller token.
var errNoCallerToken = errors.New("the request carries no caller token to exchange (the client did not authenticate with a bearer token, or the call's context was not made with CallContext)")

// ownMethods are the requests a token_exchange upstream's client makes
// on the gateway's own account when no caller's token is in their
// context — connecting, discovering, listing and listening; "" is a
// request without a JSON-RPC request in it (the SSE GET, the session's
// DELETE, a response to the upstream's request) — and which it
// authorizes with a client credentials token of its own, as it does
// notifications. Any other request (a tools/call, a resources/read, a
// body it cannot read) needs a caller's token.
var ownMethods = []string{"", "initialize", "server/discover", "ping", "tools/list", "prompts/list",
	"resources/list", "resources/templates/list", "subscriptions/listen"}

// credentials sets an upstream's credentials on its requests.
type credentials struct {
	server    string
	kind      string // "" (none), or one of the kinds
	header    string // kindHeader: the header, and its value
	value     string
	ep        *endpoint
	audience  string      // the cache key's audience: Audience and Resource
	own       *tokenCache // the gateway's client credentials tokens
	exchanged *tokenCache // the exchanged tokens, by caller
}

// newCredentials reads s.Auth and its secrets.
func newCredentials(s gateway.Server, dir string, opts Options) (*credentials, error) {
	c := &credentials{server: s.Name}
	a := s.Auth
	if a == nil {
		return c, nil
	}
	c.kind = a.Kind
	switch a.Kind {
	case kindHeader:
		c.header = http.CanonicalHeaderKey(a.Header)
		if a.Header == "" {
			c.header = "Authorization"
		}
		if !validHeaderName(c.header) {
			return nil, fmt.Errorf("header %q is not a header name", a.Header)
		}
		if slices.Contains(reservedHeaders, c.header) {
			return nil, fmt.Errorf("header %s is the transport's own, not a credential's", c.header)
		}
		v, err := readSecret(a.Value, dir, "value", opts.Getenv)
		if err != nil {
			return nil, err
		}
		c.value = v
	case kindClientCredentials, kindTokenExchange:
		if _, err := checkURL(a.TokenURL); err != nil {
			return nil, fmt.Errorf("token_url: %v", err)
		}
		if a.ClientID == "" {
			return nil, fmt.Errorf("%s needs a client_id", a.Kind)
		}
		secret, err := readSecret(a.ClientSecret, dir, "client_secret", opts.Getenv)
		if err != nil {
			return nil, err
		}
		hc := opts.TokenClient
		if hc == nil {
			hc = tokenClient()
		}
		c.ep = &endpoint{server: s.Name, url: a.TokenURL, clientID: a.ClientID, secret: secret,
			scopes: slices.Clone(a.Scopes), audience: a.Audience, resource: a.Resource, hc: hc}
		c.audience = a.Audience + "\x00" + a.Resource
		c.own = newTokenCache(1, opts.Now)
		if a.Kind == kindTokenExchange {
			c.exchanged = newTokenCache(opts.CacheSize, opts.Now)
		}
	default:
		return nil, fmt.Errorf("kind %q, want %s, %s or %s", a.Kind, kindHeader, kindClientCredentials, kindTokenExchange)
	}
	return c, nil
}

// tokenClient is the default Options.TokenClient.
func tokenClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport: t,
		Timeout:   30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the token endpoint redirected: not followed")
		},
	}
}

// apply sets the credentials of a request of method (its JSON-RPC
// method, "" for none) made in ctx on h. drop, when not nil, forgets the
// token set, for an upstream that refused it.
func (c *credentials) apply(ctx context.Context, h http.Header, method string) (drop func(), err error) {
	switch c.kind {
	case "":
		return nil, nil
	case kindHeader:
		h.Set(c.header, c.value)
		return nil, nil
	}
	caller := callerToken(ctx)
	if c.kind == kindTokenExchange && caller != "" {
		key := keyOf(caller, c.audience)
		tok, err := c.exchanged.get(ctx, key, func(ctx context.Context) (token, error) { return c.ep.exchange(ctx, caller) })
		if err != nil {
			return nil, err
		}
		h.Set("Authorization", "Bearer "+tok)
		return func() { c.exchanged.drop(key, tok) }, nil
	}
	if c.kind == kindTokenExchange && !slices.Contains(ownMethods, method) && !strings.HasPrefix(method, "notifications/") {
		return nil, &CredentialError{Server: c.server, Kind: kindTokenExchange, TokenURL: c.ep.url, Err: errNoCallerToken}
	}
	key := keyOf("", c.audience)
	tok, err := c.own.get(ctx, key, c.ep.clientCredentials)
	if err != nil {
		return nil, err
	}
	h.Set("Authorization", "Bearer "+tok)
	return func() { c.own.drop(key, tok) }, nil
}
