package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
	"github.com/verity-go/verity/kernel/toolgate/pin"
)

const testHash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestDecodeRepin: a re-pin is read strictly, every problem named by its
// member's pointer.
func TestDecodeRepin(t *testing.T) {
	a, err := decodeRepin([]byte(`{"tool":"echo","pinned":"","seen":"` + testHash + `","reason":"new tool"}`))
	require.NoError(t, err)
	assert.Equal(t, inboxRepin{Tool: "echo", Seen: testHash, Reason: "new tool"}, a)
	_, err = decodeRepin([]byte(`{"tool":"echo","pinned":"` + testHash + `","seen":"` + testHash + `"}`))
	require.NoError(t, err, "reason is optional")

	for body, want := range map[string]string{
		`{"tool":"","pinned":"","seen":"` + testHash + `"}`:                      "/tool: length",
		`{"tool":"e","pinned":"md5:1","seen":"` + testHash + `"}`:                "/pinned: hash",
		`{"tool":"e","pinned":"","seen":"` + strings.ToUpper(testHash) + `"}`:    "/seen: hash",
		`{"tool":"e","pinned":"","seen":"` + testHash + `","reason":"a\u202eb"}`: "/reason: character",
		`{"tool":"e","pinned":"","seen":"` + testHash + `","Reason":"x"}`:        "/Reason",
		`{"tool":"e","tool":"f","pinned":"","seen":"` + testHash + `"}`:          "duplicate_key",
		`{"tool":"e","seen":"` + testHash + `"}`:                                 "/pinned",
		`{"tool":"e","pinned":null,"seen":"` + testHash + `"}`:                   "/pinned",
		`[]`: "re-pin",
	} {
		_, err := decodeRepin([]byte(body))
		require.Error(t, err, body)
		assert.ErrorIs(t, err, errRepin, body)
		assert.Contains(t, err.Error(), want, body)
	}
	_, err = decodeRepin([]byte(`{"tool":"","pinned":"x","seen":"y","reason":"` + strings.Repeat("r", maxAnswerReason+1) + `"}`))
	var ve *violation.ValidationError
	require.True(t, errors.As(err, &ve))
	assert.Len(t, ve.Violations, 4, "every problem at once: %v", err)
}

func FuzzDecodeRepin(f *testing.F) {
	for _, s := range []string{
		`{"tool":"echo","pinned":"","seen":"` + testHash + `","reason":"ok"}`,
		`{"tool":"echo","pinned":"` + testHash + `","seen":"` + testHash + `"}`,
		`{"tool":"e\u0000","pinned":"","seen":"` + testHash + `"}`,
		`{"tool":"e","pinned":"","seen":"` + testHash + `","reason":"\u2028"}`,
		"{\"tool\":\"\xff\",\"pinned\":\"\",\"seen\":\"x\"}",
		`{"tool":"e","tool":"e"}`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeRepin(b)
		if err != nil {
			if !assert.ErrorIs(t, err, errRepin) {
				t.FailNow()
			}
			return
		}
		assert.True(t, a.Tool != "" && len(a.Tool) <= maxRepinTool && utf8.ValidString(a.Tool))
		assert.True(t, a.Pinned == "" || pin.ValidHash(a.Pinned))
		assert.True(t, pin.ValidHash(a.Seen))
		assert.False(t, strings.ContainsFunc(a.Reason, hiddenInReason))
		assert.LessOrEqual(t, len(a.Reason), maxAnswerReason)
	})
}

// pinsTokenPolicy names the approvers of a token-authenticated proxy:
// group ops for deletes.
const pinsTokenPolicy = `{
  "version": 1,
  "budget": "10",
  "min_cost": "0.01",
  "approvers": {"DELETE": ["group:ops"]},
  "tools": [
    {"match": "echo", "cost": "0.1"}, {"match": "search", "cost": "0.1"}, {"match": "flip", "cost": "0.1"},
    {"match": "crash", "cost": "0.1"}, {"match": "delete_file", "cost": "1", "tier": "DELETE"}
  ]
}`

// TestRepinIdentity: with tokens, a re-pin is recorded as the token's
// principal, who must be an approver the policy names; the principal
// whose call was refused on the changed tool may not re-pin it, another
// approver may, and the re-pin names them.
func TestRepinIdentity(t *testing.T) {
	is := testissuer.New(t, testResource)
	d := newDrift(t, "change")
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(pinsTokenPolicy), 0o600))
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-jwks", is.JWKSURL,
		"-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"}, d.argv(t)...), nil)
	base := inboxURL(t, p)
	olga, sam, eve := issuerToken(t, is, "olga", "ops"), issuerToken(t, is, "sam", "ops"), issuerToken(t, is, "eve", "dev")

	cs := connectWithToken(t, p, olga)
	assert.Equal(t, "flipped (change)", receive(t, callAsync(cs, "flip", nil)))
	r := waitReviews(t, base, olga, 1)["echo"]
	assert.True(t, r.CanApprove)
	assert.Contains(t, receive(t, callAsync(cs, "echo", map[string]any{"text": "x"})), `refused: tool "echo" refused: its definition is not the one pinned`)
	r = pinsGet(t, base, olga).Reviews[0]
	assert.Equal(t, []string{is.URL + "|olga"}, r.Asked)
	assert.False(t, r.CanApprove, "olga's call asked for it")

	code, res := repinPost(t, base, repinBody(r, "mine"), bearerHeader(olga))
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, res.Error, "cannot approve it")
	code, res = repinPost(t, base, repinBody(r, "not mine to give"), bearerHeader(eve))
	assert.Equal(t, http.StatusForbidden, code, "eve is no approver")
	assert.Contains(t, res.Error, "not an approver")
	code, _ = repinPost(t, base, repinBody(r, ""), nil)
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	code, res = repinPost(t, base, repinBody(r, "reviewed"), map[string]string{"Authorization": "Bearer " + sam, "Origin": "http://evil.example"})
	assert.Equal(t, http.StatusForbidden, code, "cross-origin")
	assert.Contains(t, res.Error, "cross-origin")

	code, res = repinPost(t, base, repinBody(r, "reviewed"), bearerHeader(sam))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.Equal(t, "x", receive(t, callAsync(cs, "echo", map[string]any{"text": "x"})))
	assert.Equal(t, 1, d.ran(t, "echo"))
	stopHTTPProxy(t, p)

	repins := pinEntries(t, logPath, gatelog.KindRepin)
	require.Len(t, repins, 1)
	assert.Equal(t, is.URL+"|sam", repins[0].payload["approver"])
	assert.Equal(t, is.URL+"|olga", repins[0].payload["requested_by"])
}
