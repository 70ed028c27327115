package bearer

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// WellKnownPath is where RFC 9728 puts a protected resource's metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// Resource describes the protected resource.
type Resource struct {
	// URL is the resource identifier (https://host[:port][/path]): the
	// metadata's "resource", and the audience its tokens must name.
	URL string
	// AuthorizationServers are the issuers that grant its tokens.
	AuthorizationServers []string
	// Scopes are required of every request (and listed as
	// scopes_supported).
	Scopes []string
}

// MetadataURL is the URL of the resource's metadata (RFC 9728 §3.1): the
// well-known path inserted between the resource's host and its path.
func (r Resource) MetadataURL() (string, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return "", fmt.Errorf("resource %q: %w", r.URL, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("resource %q: not an absolute http(s) URL without query, fragment or user", r.URL)
	}
	return u.Scheme + "://" + u.Host + WellKnownPath + strings.TrimSuffix(u.EscapedPath(), "/"), nil
}

// Protect serves h as an OAuth 2.1 protected resource (the MCP
// authorization specification; RFC 6750, RFC 9728):
//
//   - GET WellKnownPath (and WellKnownPath followed by the resource's
//     path) answers the metadata document, without authentication, by
//     auth.ProtectedResourceMetadataHandler (go-sdk v1.8.0, auth/auth.go:
//     "func ProtectedResourceMetadataHandler(metadata
//     *oauthex.ProtectedResourceMetadata) http.Handler");
//   - a request with more than one Authorization header is answered
//     400, so that no component reads one credential and another the
//     other;
//   - any other request needs "Authorization: Bearer TOKEN" that v
//     verifies, checked by auth.RequireBearerToken (auth/auth.go: "func
//     RequireBearerToken(verifier TokenVerifier, opts
//     *RequireBearerTokenOptions) func(http.Handler) http.Handler", with
//     RequireBearerTokenOptions{ResourceMetadataURL, ClockSkew}, the
//     skew being v's leeway, so that exp is held to it there too); a
//     missing or refused token is answered 401 with `WWW-Authenticate:
//     Bearer resource_metadata="…"` (with error="invalid_token" first
//     when a token was presented) and a body that does not say why. It
//     puts
//     the token's auth.TokenInfo in the request's context, where the
//     streamable MCP transport finds it (CallToolRequest.Extra.TokenInfo)
//     and binds each session to its UserID;
//   - a verified token without every scope of r.Scopes is answered 403
//     with `WWW-Authenticate: Bearer error="insufficient_scope",
//     scope="…", resource_metadata="…"` (RFC 6750 §3.1). The SDK's own
//     scope check is not used because its 403 carries no error code.
func Protect(h http.Handler, v *Verifier, r Resource) (http.Handler, error) {
	metaURL, err := r.MetadataURL()
	if err != nil {
		return nil, err
	}
	if len(r.AuthorizationServers) == 0 {
		return nil, errors.New("bearer: a resource needs an authorization server")
	}
	meta := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               r.URL,
		AuthorizationServers:   r.AuthorizationServers,
		ScopesSupported:        r.Scopes,
		BearerMethodsSupported: []string{"header"},
	})
	scoped := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if cw, ok := w.(*challengeWriter); ok {
			w = cw.ResponseWriter // verified: the handler writes to the connection itself
		}
		ti := auth.TokenInfoFromContext(req.Context())
		if ti == nil || !HasScopes(ti, r.Scopes) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer error=%q, scope=%q, resource_metadata=%q",
				"insufficient_scope", strings.Join(r.Scopes, " "), metaURL))
			http.Error(w, "insufficient_scope", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, req)
	})
	// The SDK checks exp again, strictly unless told the leeway
	// (ClockSkew): a token v accepted within its leeway would be refused.
	protected := auth.RequireBearerToken(v.TokenVerifier(), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: metaURL, ClockSkew: v.cfg.Leeway})(scoped)
	u, _ := url.Parse(metaURL)
	metaPath := u.EscapedPath()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if p := req.URL.EscapedPath(); p == WellKnownPath || p == metaPath {
			meta.ServeHTTP(w, req)
			return
		}
		if len(req.Header.Values("Authorization")) > 1 {
			// Two credentials: which one a component reads is not defined
			// (RFC 9110 §5.3 allows no list for Authorization), so none
			// is read.
			http.Error(w, "invalid_request: more than one Authorization header", http.StatusBadRequest)
			return
		}
		if fields := strings.Fields(req.Header.Get("Authorization")); len(fields) == 2 && strings.EqualFold(fields[0], "bearer") {
			// A token was presented: a 401 says error="invalid_token".
			w = &challengeWriter{ResponseWriter: w}
		}
		protected.ServeHTTP(w, req)
	}), nil
}

// challengeWriter adds error="invalid_token" (RFC 6750 §3.1) to the
// challenge of the 401 that auth.RequireBearerToken answers a presented
// but refused token with; the SDK's challenge names only the metadata.
type challengeWriter struct{ http.ResponseWriter }

func (c *challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		h := c.Header()
		if v := h.Get("WWW-Authenticate"); strings.HasPrefix(v, "Bearer ") {
			h.Set("WWW-Authenticate", `Bearer error="invalid_token", `+strings.TrimPrefix(v, "Bearer "))
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
