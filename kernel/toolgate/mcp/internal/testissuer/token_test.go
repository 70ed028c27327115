package testissuer_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

// ask posts form to the token endpoint, with Basic credentials when id
// is not empty, and returns the status and the decoded answer.
func ask(t *testing.T, is *testissuer.Issuer, id, secret string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, is.TokenURL, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// TestTokenEndpoint: the endpoint authenticates its clients (Basic or
// form, not both), grants client credentials and exchanges of its own
// tokens, refuses what it is told to and what is wrong, and counts both.
func TestTokenEndpoint(t *testing.T) {
	is := testissuer.New(t, "https://gateway.example")
	is.AddClient("gw:1", "s e:cret")
	cc := url.Values{"grant_type": {testissuer.GrantClientCredentials}, "scope": {"a b"}, "audience": {"https://up.example"}}
	alice := is.Token(t, "EdDSA", "alice", "a")
	ex := url.Values{"grant_type": {testissuer.GrantTokenExchange}, "subject_token": {alice},
		"subject_token_type": {testissuer.TokenTypeAccessToken}, "scope": {"a b"}, "resource": {"https://up.example/mcp"}}

	status, out := ask(t, is, "gw:1", "s e:cret", cc)
	require.Equal(t, 200, status, out)
	require.Equal(t, "Bearer", out["token_type"])
	require.EqualValues(t, 3600, out["expires_in"])

	post := url.Values{"client_id": {"gw:1"}, "client_secret": {"s e:cret"}}
	for k, v := range ex {
		post[k] = v
	}
	status, out = ask(t, is, "", "", post)
	require.Equal(t, 200, status, out)
	require.Equal(t, testissuer.TokenTypeAccessToken, out["issued_token_type"])
	g := is.Given()
	require.Len(t, g, 2)
	require.Equal(t, "alice", g[1].Subject)
	require.Equal(t, "a", g[1].Scope, "narrowed to the subject's scopes")
	require.Equal(t, out["access_token"], g[1].Token)

	forged := testissuer.SignWith(t, "ES256", testissuer.Kid("ES256"), testissuer.OtherKey(t, "ES256"), is.Claims("alice", "a"))
	bad := url.Values{"grant_type": {testissuer.GrantTokenExchange}, "subject_token": {forged}, "subject_token_type": {testissuer.TokenTypeAccessToken}}
	both := url.Values{"client_id": {"gw:1"}}
	for k, v := range cc {
		both[k] = v
	}
	for _, c := range []struct {
		name, id, secret string
		form             url.Values
		status           int
		code             string
	}{
		{"wrong secret", "gw:1", "nope", cc, 401, "invalid_client"},
		{"unknown client", "other", "s e:cret", cc, 401, "invalid_client"},
		{"no client", "", "", cc, 401, "invalid_client"},
		{"credentials twice", "gw:1", "s e:cret", both, 400, "invalid_request"},
		{"forged subject token", "gw:1", "s e:cret", bad, 400, "invalid_grant"},
		{"no subject token type", "gw:1", "s e:cret", url.Values{"grant_type": {testissuer.GrantTokenExchange}, "subject_token": {alice}}, 400, "invalid_request"},
		{"another grant", "gw:1", "s e:cret", url.Values{"grant_type": {"password"}}, 400, "unsupported_grant_type"},
	} {
		status, out := ask(t, is, c.id, c.secret, c.form)
		require.Equal(t, c.status, status, c.name)
		require.Equal(t, c.code, out["error"], c.name)
	}
	is.Refuse("invalid_scope", "no")
	status, out = ask(t, is, "gw:1", "s e:cret", cc)
	require.Equal(t, 400, status)
	require.Equal(t, "invalid_scope", out["error"])
	require.Equal(t, "no", out["error_description"])
	require.EqualValues(t, 2, is.Grants.Load())
	require.EqualValues(t, 8, is.Refusals.Load())
}
