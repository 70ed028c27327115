// Authentication and session ownership over real HTTP servers.
//
//   - No token, a wrong token, another scheme, an oversized token: 401
//     with WWW-Authenticate: Bearer and the same body, on every path:
//     TestAuthRefusals.
//   - A principal cannot read, write or audit another's session, and
//     gets the answer of a session that does not exist:
//     TestSessionOfAnotherPrincipalIsNotFound.
//   - The owner survives a restart over a FileStorage:
//     TestOwnerSurvivesRestart.
//   - Sessions declared without an owner are served only without
//     authentication, and owned ones only with it: TestOwnerlessSessions.
//   - TLS round trip: TestAuthOverTLS.
//   - Only the owner reaches a session, against a naive model, with
//     sessions closed and read back between requests:
//     TestOnlyTheOwnerReachesASession (rapid).
//   - The token file parser: TestParseTokenFile, FuzzParseTokenFile.

package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

const (
	aliceToken = "alice-secret-token"
	bobToken   = "bob-secret-token"
)

func digestLine(token, rest string) string {
	d := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(d[:]) + " " + rest
}

func testTokenFile(t testing.TB) *TokenFile {
	t.Helper()
	tf, err := ParseTokenFile(strings.NewReader("# test principals\n" +
		digestLine(aliceToken, "alice ops,admins") + "\n" + digestLine(bobToken, "bob") + "\n"))
	require.NoError(t, err)
	return tf
}

type authClient struct {
	t      testing.TB
	url    string
	client *http.Client
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (c authClient) do(token, method, path, body string) answer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	require.NoError(c.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.client.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func (c authClient) declare(token string) string {
	c.t.Helper()
	a := c.do(token, "POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":["a","b","c"]}`)
	require.Equal(c.t, 201, a.status, a.body)
	var out DeclareResponse
	require.NoError(c.t, decodeJSON(strings.NewReader(a.body), &out))
	return out.SessionID
}

func startAuth(t *testing.T, storage belief.Storage, opts ...Option) authClient {
	t.Helper()
	b, err := belief.NewServer(context.Background(), storage)
	require.NoError(t, err)
	ts := httptest.NewServer(New(b, opts...))
	t.Cleanup(func() { ts.Close(); b.Close() })
	return authClient{t, ts.URL, ts.Client()}
}

const unauthenticatedBody = `{"error":{"code":"UNAUTHENTICATED","message":"authentication required"}}` + "\n"

func TestAuthRefusals(t *testing.T) {
	c := startAuth(t, belief.NewMemoryStorage(), WithAuthenticator(testTokenFile(t)))
	sid := c.declare(aliceToken)
	for _, tc := range []struct{ name, header string }{
		{"missing", ""},
		{"wrong token", "Bearer not-a-token"},
		{"a token's digest", "Bearer " + strings.TrimPrefix(strings.Fields(digestLine(aliceToken, "x"))[0], "sha256:")},
		{"other scheme", "Basic " + aliceToken},
		{"empty bearer", "Bearer "},
		{"oversized", "Bearer " + strings.Repeat("x", 5000)},
		{"token with suffix", "Bearer " + aliceToken + "x"},
	} {
		for _, rt := range []struct{ method, path string }{
			{"POST", "/v1/sessions"}, {"GET", "/v1/sessions/" + sid}, {"GET", "/v1/sessions/" + sid + "/audit"},
			{"POST", "/v1/sessions/" + sid + "/terminate"}, {"GET", "/no/such/path"},
		} {
			req, err := http.NewRequest(rt.method, c.url+rt.path, strings.NewReader(`{}`))
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := c.client.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, 401, resp.StatusCode, "%s %s %s", tc.name, rt.method, rt.path)
			assert.Equal(t, `Bearer realm="verity"`, resp.Header.Get("WWW-Authenticate"), tc.name)
			assert.Equal(t, unauthenticatedBody, string(b), tc.name)
		}
	}
	// The session was not touched by any of them.
	a := c.do(aliceToken, "GET", "/v1/sessions/"+sid+"/audit", "")
	require.Equal(t, 200, a.status)
	assert.Equal(t, 1, strings.Count(a.body, `"event_id"`), a.body)
}

// sessionRoutes are requests on every route of session sid that succeed
// for its owner.
func sessionRoutes(sid string) [][3]string {
	p := "/v1/sessions/" + sid
	return [][3]string{
		{"GET", p, ""},
		{"GET", p + "/audit", ""},
		{"POST", p + "/eliminate", `{"source_id":"s","observation_id":"o1","eliminated":["a"]}`},
		{"POST", p + "/obligations", `{"obligation_id":"ob","min_total_eliminations":1}`},
		{"POST", p + "/obligations/ob/exit", `{}`},
		{"POST", p + "/conclusions", `{"conclusion_id":"c1"}`},
		{"POST", p + "/terminate", `{}`},
	}
}

func TestSessionOfAnotherPrincipalIsNotFound(t *testing.T) {
	c := startAuth(t, belief.NewMemoryStorage(), WithAuthenticator(testTokenFile(t)))
	sid := c.declare(aliceToken)
	const ghost = "00000000-0000-7000-8000-000000000000"
	for _, rt := range sessionRoutes(sid) {
		got := c.do(bobToken, rt[0], rt[1], rt[2])
		want := c.do(bobToken, rt[0], strings.ReplaceAll(rt[1], sid, ghost), rt[2])
		assert.Equal(t, 404, got.status, "%s %s: %s", rt[0], rt[1], got.body)
		assert.Equal(t, strings.ReplaceAll(want.body, ghost, sid), got.body, "%s %s", rt[0], rt[1])
		assert.Empty(t, got.header.Get("ETag"))
	}
	// Bob changed nothing: alice's log holds her declaration only.
	a := c.do(aliceToken, "GET", "/v1/sessions/"+sid+"/audit", "")
	require.Equal(t, 200, a.status)
	assert.Equal(t, 1, strings.Count(a.body, `"event_id"`), a.body)
	assert.Contains(t, a.body, `"owner":"alice"`)
	// Alice can use every route.
	for _, rt := range sessionRoutes(sid) {
		got := c.do(aliceToken, rt[0], rt[1], rt[2])
		assert.Equal(t, 200, got.status, "%s %s: %s", rt[0], rt[1], got.body)
	}
	// A client cannot name an owner of its own.
	a = c.do(bobToken, "POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":["a"],"owner":"alice"}`)
	assert.Equal(t, 400, a.status, a.body)
}

func TestOwnerSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *belief.FileStorage {
		fs, err := belief.NewFileStorage(dir, trace.FileOptions{})
		require.NoError(t, err)
		return fs
	}
	fs := open()
	b, err := belief.NewServer(context.Background(), fs, belief.WithCheckpointEvery(2))
	require.NoError(t, err)
	ts := httptest.NewServer(New(b, WithAuthenticator(testTokenFile(t))))
	c := authClient{t, ts.URL, ts.Client()}
	sid := c.declare(aliceToken)
	for i := range 3 {
		a := c.do(aliceToken, "POST", "/v1/sessions/"+sid+"/eliminate",
			fmt.Sprintf(`{"source_id":"s","observation_id":"o%d","eliminated":["a"]}`, i))
		require.Equal(t, 200, a.status, a.body)
	}
	ts.Close()
	require.NoError(t, b.Close())
	require.NoError(t, fs.Close())

	c = startAuth(t, open(), WithAuthenticator(testTokenFile(t)))
	assert.Equal(t, 404, c.do(bobToken, "GET", "/v1/sessions/"+sid, "").status)
	assert.Equal(t, 404, c.do(bobToken, "POST", "/v1/sessions/"+sid+"/terminate", `{}`).status)
	assert.Equal(t, 200, c.do(aliceToken, "GET", "/v1/sessions/"+sid, "").status)
}

func TestOwnerlessSessions(t *testing.T) {
	st := belief.NewMemoryStorage()
	b, err := belief.NewServer(context.Background(), st)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	open := httptest.NewServer(New(b))
	defer open.Close()
	authed := httptest.NewServer(New(b, WithAuthenticator(testTokenFile(t))))
	defer authed.Close()
	anon := authClient{t, open.URL, open.Client()}
	auth := authClient{t, authed.URL, authed.Client()}

	legacy := anon.declare("")
	owned := auth.declare(aliceToken)
	assert.Equal(t, 200, anon.do("", "GET", "/v1/sessions/"+legacy, "").status)
	assert.Equal(t, 404, auth.do(aliceToken, "GET", "/v1/sessions/"+legacy, "").status, "an ownerless session is nobody's under authentication")
	assert.Equal(t, 404, anon.do("", "GET", "/v1/sessions/"+owned, "").status, "an owned session is not served anonymously")
	assert.Equal(t, 200, auth.do(aliceToken, "GET", "/v1/sessions/"+owned, "").status)
}

func TestAuthOverTLS(t *testing.T) {
	b, err := belief.NewServer(context.Background(), belief.NewMemoryStorage())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ts := httptest.NewTLSServer(New(b, WithAuthenticator(testTokenFile(t))))
	defer ts.Close()
	c := authClient{t, ts.URL, ts.Client()}
	require.True(t, strings.HasPrefix(ts.URL, "https://"))
	sid := c.declare(aliceToken)
	a := c.do(aliceToken, "GET", "/v1/sessions/"+sid, "")
	assert.Equal(t, 200, a.status, a.body)
	assert.Equal(t, 401, c.do("", "GET", "/v1/sessions/"+sid, "").status)
	// A client that does not trust the certificate does not get through.
	_, err = http.Get(ts.URL + "/v1/sessions/" + sid)
	require.Error(t, err)
}

func TestPrincipalFromContext(t *testing.T) {
	var seen Principal
	tf := testTokenFile(t)
	h := New(nil, WithAuthenticator(tf))
	req := httptest.NewRequest("GET", "/v1/nothing", nil)
	req.Header.Set("Authorization", "bearer "+aliceToken)
	r, ok := h.authenticate(httptest.NewRecorder(), req)
	require.True(t, ok)
	seen, ok = PrincipalFrom(r.Context())
	require.True(t, ok)
	assert.Equal(t, Principal{Subject: "alice", Groups: []string{"ops", "admins"}}, seen)
	assert.Equal(t, "alice", seen.Key())
	assert.Equal(t, "https://issuer.example alice", Principal{Issuer: "https://issuer.example", Subject: "alice"}.Key())
}

func TestParseTokenFile(t *testing.T) {
	d := digestLine("t", "")
	d = strings.TrimSpace(d)
	good := "# comment\n\n  \t\n" + d + " alice\r\n" + digestLine("u", "alice\tops,dev") + "\n   # indented comment"
	tf, err := ParseTokenFile(strings.NewReader(good))
	require.NoError(t, err)
	assert.Equal(t, 2, tf.Len())
	upper := "sha256:" + strings.ToUpper(strings.TrimPrefix(d, "sha256:")) + " carol"
	_, err = ParseTokenFile(strings.NewReader(upper))
	require.NoError(t, err)

	for _, tc := range []struct {
		name, file string
		line       int
	}{
		{"empty", "", 0},
		{"only comments", "# a\n# b\n", 2},
		{"no subject", "# x\n" + d + "\n", 2},
		{"no prefix", strings.TrimPrefix(d, "sha256:") + " alice", 1},
		{"other algorithm", "sha512:" + strings.TrimPrefix(d, "sha256:") + " alice", 1},
		{"short digest", d[:len(d)-2] + " alice", 1},
		{"long digest", d + "00 alice", 1},
		{"not hex", d[:len(d)-1] + "g alice", 1},
		{"too many fields", d + " alice ops extra", 1},
		{"empty group", d + " alice ops,,dev", 1},
		{"trailing comma", d + " alice ops,", 1},
		{"duplicate digest", d + " alice\n" + d + " bob", 2},
		{"control character", d + " al\x01ice", 1},
		{"no-break space", d + " al\u00a0ice", 1},
		{"invalid UTF-8", d + " al\xffice", 1},
		{"bad after good", d + " alice\n\nnonsense", 3},
	} {
		_, err := ParseTokenFile(strings.NewReader(tc.file))
		var te *TokenFileError
		if assert.ErrorAs(t, err, &te, tc.name) {
			assert.Equal(t, tc.line, te.Line, "%s: %v", tc.name, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("line %d:", tc.line))
		}
	}
	_, err = ParseTokenFile(strings.NewReader(strings.Repeat("#", MaxTokenFileBytes+1)))
	assert.ErrorContains(t, err, "exceeds")
}
