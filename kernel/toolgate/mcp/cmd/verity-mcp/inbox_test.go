package main

// The approval inbox (-approvals):
//
//   - Answers are recorded as the token's principal; a principal the
//     request does not await is refused 403 and nothing is recorded;
//     unauthenticated, cross-origin, non-JSON and malformed answers are
//     refused: TestInboxAnswersAsThePrincipal.
//   - A held call unanswered within approval_timeout is refused, on the
//     log; approved later at the inbox (without tokens: as -approver),
//     the same call made again runs: TestInboxHeldCallTimesOut.
//   - A proxy restarted in the middle of a waiting request shows it
//     again, and an approval then lets the client's retried call run:
//     TestInboxRestartMidRequest.
//   - The page, in Chromium, through its own script: inbox_chromium_test.go.
//   - Answers are decoded strictly, and a refusal names every problem
//     with its member: TestDecodeAnswer, TestDecodeAnswerNamesEveryProblem,
//     FuzzDecodeAnswer; as the decoder before the strict reader did, but
//     for members named only case-insensitively: FuzzDecodeAnswerAgrees.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
	"github.com/verity-go/verity/trace"
)

// inboxPolicy: deletes need one of ops, writes (PRIVILEGE) one of ops
// and one of security.
const inboxPolicy = `{
  "version": 1,
  "budget": "10",
  "min_cost": "0.01",
  "approvers": {"DELETE": [%s], "PRIVILEGE": ["group:ops", "group:security"]},
  "tools": [
    {"match": "read_file", "cost": "0.1"},
    {"match": "write_file", "cost": "0.5", "tier": "PRIVILEGE"},
    {"match": "delete_file", "cost": "1", "tier": "DELETE"}
  ],
  "approval_timeout": %q,
  "approval_ttl": "1h"
}`

func writeInboxPolicy(t testing.TB, deleteApprovers, timeout string) string {
	p := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(strings.Replace(inboxPolicy, "%s", deleteApprovers, 1), "%q", `"`+timeout+`"`, 1)), 0o600))
	return p
}

// inboxURL waits for the proxy's inbox to listen and returns its URL.
func inboxURL(t testing.TB, p *proxy) string {
	var u string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`msg="approval inbox" url=(\S+)`).FindStringSubmatch(p.stderr.String())
		if m != nil {
			u = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond)
	return u
}

// issuerToken is a token of is for sub in groups.
func issuerToken(t testing.TB, is *testissuer.Issuer, sub string, groups ...string) string {
	c := is.Claims(sub, "")
	if groups != nil {
		c["groups"] = groups
	}
	return is.Sign(t, "ES256", jwt.MapClaims(c))
}

// inboxGet lists the inbox's requests as token's principal.
func inboxGet(t testing.TB, base, token string) inboxList {
	req, err := http.NewRequest("GET", base+"api/requests", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, inboxCSP, resp.Header.Get("Content-Security-Policy"))
	var l inboxList
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
	return l
}

// inboxPost posts body as an answer with the given headers and returns
// the status and the decoded result.
func inboxPost(t testing.TB, base, body string, header map[string]string) (int, answerResult) {
	return apiPost[answerResult](t, base+"api/answer", body, header)
}

// apiPost posts body as JSON to one of the inbox's endpoints with the
// given headers and returns the status and the result decoded as an R
// (zero when the body is not one).
func apiPost[R any](t testing.TB, url, body string, header map[string]string) (int, R) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r R
	_ = json.Unmarshal(b, &r)
	return resp.StatusCode, r
}

func bearerHeader(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// connectWithToken connects an MCP client that cannot elicit over HTTP.
// On cleanup the proxy is stopped first: closing a client waits for its
// calls, and a held call ends when the proxy stops.
func connectWithToken(t *testing.T, p *proxy, token string) *sdk.ClientSession {
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "web-agent", Version: "v1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + httpAddr(t, p),
			HTTPClient: &http.Client{Transport: withToken{token, http.DefaultTransport}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	t.Cleanup(p.cancel)
	return cs
}

// callAsync calls tool and sends its result's text ("refused: …" when
// it is an error) on the channel returned.
func callAsync(cs *sdk.ClientSession, tool string, args map[string]any) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
		switch {
		case err != nil:
			out <- "error: " + err.Error()
		case res.IsError:
			out <- "refused: " + text(res)
		default:
			out <- text(res)
		}
	}()
	return out
}

func receive(t testing.TB, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(2 * time.Minute):
		t.Fatal("the call did not return")
		return ""
	}
}

// waitListed waits until the inbox lists n requests.
func waitListed(t testing.TB, base, token string, n int) []inboxRequest {
	var l inboxList
	require.Eventually(t, func() bool { l = inboxGet(t, base, token); return len(l.Requests) == n }, time.Minute, 10*time.Millisecond)
	return l.Requests
}

// logEntries reads a stopped proxy's log: the payloads of kind.
func logEntries(t testing.TB, path, kind string) []map[string]any {
	store, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	defer log.Close()
	var out []map[string]any
	for e, err := range log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		if e.Kind == kind {
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			out = append(out, m)
		}
	}
	return out
}

func TestInboxAnswersAsThePrincipal(t *testing.T) {
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := writeInboxPolicy(t, `"group:ops"`, "10m")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-jwks", is.JWKSURL,
		"-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)
	agentTok := issuerToken(t, is, "agent")
	olga, mallory := issuerToken(t, is, "olga", "ops"), issuerToken(t, is, "mallory", "interns")

	// The page and its files are served without a token, with the policy.
	for _, path := range []string{"", "inbox.js", "page.js", "inbox.css"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, inboxCSP, resp.Header.Get("Content-Security-Policy"))
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	}
	// The API needs one.
	resp, err := http.Get(base + "api/requests")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "resource_metadata=")

	cs := connectWithToken(t, p, agentTok)
	done := callAsync(cs, "delete_file", map[string]any{"path": "a.txt"})
	reqs := waitListed(t, base, olga, 1)
	r := reqs[0]
	assert.Equal(t, "delete_file", r.Tool)
	assert.Equal(t, `{"path":"a.txt"}`, r.Arguments)
	assert.Equal(t, []string{"group:ops"}, r.Awaiting)
	assert.True(t, r.CanAnswer)
	assert.NotEmpty(t, r.Expires)
	assert.False(t, waitListed(t, base, mallory, 1)[0].CanAnswer)

	answer := `{"id":"` + r.ID + `","decision":"approve","reason":"ok"}`
	code, res := inboxPost(t, base, answer, bearerHeader(mallory))
	assert.Equal(t, http.StatusForbidden, code, "mallory is not in ops")
	assert.Contains(t, res.Error, "not an approver")
	code, _ = inboxPost(t, base, answer, nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = inboxPost(t, base, answer, map[string]string{"Authorization": "Bearer " + olga, "Origin": "http://evil.example"})
	assert.Equal(t, http.StatusForbidden, code, "cross-origin")
	code, _ = inboxPost(t, base, answer, map[string]string{"Authorization": "Bearer " + olga, "Content-Type": "text/plain"})
	assert.Equal(t, http.StatusUnsupportedMediaType, code)
	code, res = inboxPost(t, base, `{"id":"`+r.ID+`","decision":"approve","decision":"deny"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusBadRequest, code, "a duplicate member")
	assert.Contains(t, res.Error, "invalid answer: 1 violation: duplicate_key: ")
	code, res = inboxPost(t, base, `{"id":"`+r.ID+`","decision":"Approve","ID":"x"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusBadRequest, code, "a misspelt decision and a member named only case-insensitively")
	assert.Equal(t, `invalid answer: 2 violations: /ID: unknown_field: unknown member; /decision: enum: is "approve" or "deny"`, res.Error)
	code, _ = inboxPost(t, base, `{"id":"nope","decision":"approve"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusNotFound, code)
	select {
	case s := <-done:
		t.Fatalf("the call returned before an approval: %s", s)
	default:
	}

	code, res = inboxPost(t, base, answer, bearerHeader(olga))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.True(t, res.Granted)
	assert.NotContains(t, receive(t, done), "refused")
	assert.False(t, up.exists("a.txt"))
	assert.Empty(t, inboxGet(t, base, olga).Requests)

	stopHTTPProxy(t, p)
	approvals := logEntries(t, logPath, claims.KindApprove)
	require.Len(t, approvals, 1, "mallory's answer was not recorded")
	a := approvals[0]["approval"].(map[string]any)
	assert.Equal(t, "group:ops", a["approver"])
	assert.Equal(t, "by "+is.URL+"|olga: ok", a["reason"], "the authenticated principal answered")
}

// TestInboxSelfApprovalRefused403: the principal that made a PRIVILEGE
// call, approving it at the inbox, is refused with 403 and a reason
// saying so (it used to be refused with 500, as if the proxy had failed),
// and nothing is approved: another principal's approval still counts.
func TestInboxSelfApprovalRefused403(t *testing.T) {
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	pol := writeInboxPolicy(t, `"group:ops"`, "10m")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-jwks", is.JWKSURL,
		"-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)
	olga := issuerToken(t, is, "olga", "ops", "security")
	cs := connectWithToken(t, p, olga)
	done := callAsync(cs, "write_file", map[string]any{"path": "b.txt", "content": "b"})
	r := waitListed(t, base, olga, 1)[0]
	require.Equal(t, "PRIVILEGE", r.Tier)

	code, res := inboxPost(t, base, `{"id":"`+r.ID+`","decision":"approve","reason":"mine"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusForbidden, code, res.Error)
	assert.Contains(t, res.Error, "cannot approve it")
	assert.Len(t, waitListed(t, base, olga, 1)[0].Awaiting, 2, "nothing was approved: both approvers still awaited")
	select {
	case s := <-done:
		t.Fatalf("the call returned before an approval: %s", s)
	default:
	}
	stopHTTPProxy(t, p)
	assert.Empty(t, logEntries(t, logPath, claims.KindApprove), "the self-approval was not recorded as an approval")
}

func TestInboxHeldCallTimesOut(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := writeInboxPolicy(t, `"human"`, "1s")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)

	res := p.call(t, "delete_file", map[string]any{"path": "a.txt"})
	require.True(t, res.IsError)
	assert.Regexp(t, `^tool "delete_file" \(rule #2, approval\): DELETE: no answer within 1(\.\d+)?s; the request waits until \S+: call again once it is approved; a human can answer the request at the approval inbox http://127\.0\.0\.1:\d+/$`, text(res))
	reqs := waitListed(t, base, "", 1)
	assert.Equal(t, "human", inboxGet(t, base, "").You)

	// Without tokens the inbox answers as -approver, on its own Host only.
	req, err := http.NewRequest("POST", base+"api/answer", strings.NewReader(`{"id":"`+reqs[0].ID+`","decision":"approve"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, "a rebound name is refused")
	code, ar := inboxPost(t, base, `{"id":"`+reqs[0].ID+`","decision":"approve"}`, nil)
	require.Equal(t, http.StatusOK, code, ar.Error)
	assert.True(t, ar.Granted)

	res = p.call(t, "delete_file", map[string]any{"path": "a.txt"})
	assert.False(t, res.IsError, text(res))
	assert.False(t, up.exists("a.txt"))
	require.Equal(t, 0, p.stop(t))
	refusals := logEntries(t, logPath, gatelog.KindRefuse)
	require.Len(t, refusals, 1)
	assert.Equal(t, "approval_timeout", refusals[0]["reason"])
	assert.Equal(t, reqs[0].ID, refusals[0]["approval"])
}

// TestInboxRestartMidRequest: the proxy stops while a call waits; the
// call in flight ends with it. Started again over the same log, the
// inbox shows the request as before; approved there, the client's same
// call made again runs, once.
func TestInboxRestartMidRequest(t *testing.T) {
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := writeInboxPolicy(t, `"group:ops"`, "10m")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	args := append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-jwks", is.JWKSURL,
		"-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"}, up.argv()...)
	agentTok, olga := issuerToken(t, is, "agent"), issuerToken(t, is, "olga", "ops")

	p := startProxy(t, args, nil)
	cs := connectWithToken(t, p, agentTok)
	done := callAsync(cs, "delete_file", map[string]any{"path": "a.txt"})
	before := waitListed(t, inboxURL(t, p), olga, 1)
	stopHTTPProxy(t, p)
	first := receive(t, done)
	assert.True(t, strings.HasPrefix(first, "error: ") || strings.HasPrefix(first, "refused: "), "the call in flight ends with the proxy: %s", first)
	assert.True(t, up.exists("a.txt"))

	p2 := startProxy(t, args, nil)
	base := inboxURL(t, p2)
	after := waitListed(t, base, olga, 1)
	assert.Equal(t, before, after, "the same request, as it was asked")
	code, res := inboxPost(t, base, `{"id":"`+after[0].ID+`","decision":"approve"}`, bearerHeader(olga))
	require.Equal(t, http.StatusOK, code, res.Error)
	require.True(t, res.Granted)

	cs2 := connectWithToken(t, p2, agentTok)
	again := receive(t, callAsync(cs2, "delete_file", map[string]any{"path": "a.txt"}))
	assert.NotContains(t, again, "refused", "approved after the restart: the call made again runs")
	assert.False(t, up.exists("a.txt"))
	assert.Equal(t, 1, up.ran(t, "delete_file"))
	stopHTTPProxy(t, p2)

	var tagged int
	for _, e := range logEntries(t, logPath, "kernel.execute") {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), `"approval:`+after[0].ID+`"`) {
			tagged++
		}
	}
	assert.Equal(t, 1, tagged, "one execution names the approval")
}

func TestInboxUsage(t *testing.T) {
	pol := writeInboxPolicy(t, `"human"`, "1m")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-approvals", "0.0.0.0:0"}, "-approvals 0.0.0.0:0 is not a loopback address"},
		{[]string{"-approvals", ":0"}, "is not a loopback address"},
		{[]string{"-approvals-insecure-no-auth"}, "-approvals-insecure-no-auth needs -approvals"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append(append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "l")}, c.args...), "--", "true"),
			strings.NewReader(""), io.Discard, &stderr)
		assert.Equal(t, 2, code, c.args)
		assert.Contains(t, stderr.String(), c.want)
	}
}
