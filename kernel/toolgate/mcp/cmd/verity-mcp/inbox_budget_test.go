package main

// A budget that renews, changed by an approver at the inbox while the
// proxy holds the log (POST /api/budget): TestInboxBudgetGrant; its body
// decoded strictly: TestDecodeBudgetChange, FuzzDecodeBudgetChange.

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

const budgetPolicy = `{
  "version": 2,
  "budget": "0.2",
  "min_cost": "0.01",
  "budget_period": {"calendar": "day", "time_zone": "Europe/Paris"},
  "approvers": {"DELETE": ["group:ops"]},
  "tools": [{"match": "read_file", "cost": "0.1"}]
}`

func budgetPost(t testing.TB, base, body string, header map[string]string) (int, budgetResult) {
	return apiPost[budgetResult](t, base+"api/budget", body, header)
}

// TestInboxBudgetGrant: a caller's day budget spent, its call is refused
// saying when it comes back; a principal who is no approver cannot add
// to it (403, nothing recorded), an approver of the ops group can, and
// the caller's next call runs; the log names who granted and why.
func TestInboxBudgetGrant(t *testing.T) {
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(budgetPolicy), 0o600))
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-jwks", is.JWKSURL,
		"-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)
	olga, mallory := issuerToken(t, is, "olga", "ops"), issuerToken(t, is, "mallory", "interns")
	cs := connectWithToken(t, p, issuerToken(t, is, "agent"))
	read := func() string { return receive(t, callAsync(cs, "read_file", map[string]any{"path": "a.txt"})) }
	assert.NotContains(t, read(), "refused")
	assert.NotContains(t, read(), "refused")
	out := read()
	assert.Contains(t, out, "refused")
	assert.Contains(t, out, "remaining 0 of 0.2 this budget period; the budget renews at ")

	caller := is.URL + "|agent"
	body := `{"caller":"` + caller + `","action":"grant","amount":"0.1","reason":"release night"}`
	code, res := budgetPost(t, base, body, bearerHeader(mallory))
	assert.Equal(t, http.StatusForbidden, code, res.Error)
	code, _ = budgetPost(t, base, body, nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = budgetPost(t, base, body, map[string]string{"Authorization": "Bearer " + olga, "Origin": "http://evil.example"})
	assert.Equal(t, http.StatusForbidden, code, "cross-origin")
	code, res = budgetPost(t, base, `{"caller":"`+caller+`","action":"grant","reason":"x"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, res.Error, "/amount: required")
	code, _ = budgetPost(t, base, `{"caller":"nobody","action":"reset","reason":"x"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusNotFound, code)
	code, res = budgetPost(t, base, body, bearerHeader(olga))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.Equal(t, is.URL+"|olga", res.By)
	assert.NotContains(t, read(), "refused", "granted")
	assert.Contains(t, read(), "refused")

	stopHTTPProxy(t, p)
	grants := logEntries(t, logPath, gatelog.KindBudget)
	require.Len(t, grants, 1, "mallory's change was not recorded")
	assert.Equal(t, is.URL+"|olga", grants[0]["approver"])
	assert.Equal(t, "release night", grants[0]["reason"])
	assert.Equal(t, "grant", grants[0]["action"])
	assert.Equal(t, "0.1", grants[0]["amount"])
}

func TestDecodeBudgetChange(t *testing.T) {
	c, amount, err := decodeBudgetChange([]byte(`{"caller":"a","action":"grant","amount":"2.5","reason":"r"}`))
	require.NoError(t, err)
	assert.Equal(t, "a", c.Caller)
	assert.Equal(t, "2.5", amount.String())
	_, _, err = decodeBudgetChange([]byte(`{"caller":"a","action":"reset","reason":"r"}`))
	require.NoError(t, err)
	for body, want := range map[string]string{
		`{"caller":"","action":"give","amount":"-1","reason":""}`:        "3 violations",
		`{"caller":"a","action":"reset","amount":"1","reason":"r"}`:      "/amount: cost: a reset",
		`{"caller":"a","action":"grant","amount":"0.0001","reason":"r"}`: "/amount: cost:",
		`{"caller":"a","action":"grant","amount":"1","reason":"\u202e"}`: "/reason: character",
		`{"caller":"a","action":"grant","amount":"1","Reason":"r"}`:      "/Reason: unknown_field",
		`{"caller":"a","caller":"b","action":"reset","reason":"r"}`:      "duplicate_key",
		`[]`: "type",
		`{"caller":"a\n","action":"grant","amount":"1","reason":"because"}`: "/caller: character",
	} {
		_, _, err := decodeBudgetChange([]byte(body))
		require.ErrorIs(t, err, errBudgetChange, body)
		assert.Contains(t, err.Error(), want, body)
	}
}

// FuzzDecodeBudgetChange: any body is refused with errBudgetChange or
// accepted within its bounds.
func FuzzDecodeBudgetChange(f *testing.F) {
	for _, s := range []string{
		`{"caller":"a","action":"grant","amount":"2.5","reason":"r"}`,
		`{"caller":"a","action":"reset","reason":"r"}`,
		`{"caller":"a","action":"reset","amount":"","reason":"r"}`,
		`{"caller":"a","action":"grant","amount":"1e3","reason":"r"}`,
		"{\"caller\":\"\xff\",\"action\":\"reset\",\"reason\":\"r\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, amount, err := decodeBudgetChange(b)
		if err != nil {
			if !assert.ErrorIs(t, err, errBudgetChange) {
				t.FailNow()
			}
			return
		}
		switch {
		case c.Action == "grant" && amount <= 0, c.Action == "reset" && (amount != 0 || c.Amount != ""),
			c.Action != "grant" && c.Action != "reset":
			t.Fatalf("accepted %+v (amount %s)", c, amount)
		case c.Caller == "" || len(c.Caller) > maxBudgetCaller || strings.TrimSpace(c.Reason) == "" || len(c.Reason) > maxAnswerReason,
			!utf8.ValidString(c.Caller) || !utf8.ValidString(c.Reason) || strings.ContainsFunc(c.Caller+c.Reason, hiddenInReason):
			t.Fatalf("out of bounds: %+v", c)
		}
	})
}
