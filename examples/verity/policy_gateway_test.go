package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envServer is an MCP server over stdio in sh whose one tool is named
// after the environment it was given: the secret set_env reads, and a
// variable of the parent's that no allow-list names (which must be
// empty).
const envServer = `read -r init
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"env","version":"1"}}}'
read -r initialized
read -r list
printf '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"tok-%s-%s","inputSchema":{"type":"object"}}]}}\n' "$TOKEN" "$GW_PARENT_ONLY"
read -r eof
`

// remoteServer is a streamable HTTP MCP server that wants the header
// X-Api-Key: k3y, gives a session at initialize and answers tools/list
// as server-sent events (a notification first); it counts the requests
// that came without the session or with the wrong Mcp-Method.
type remoteServer struct {
	bad atomic.Int32
}

func (s *remoteServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Api-Key") != "k3y" {
		w.Header().Set("WWW-Authenticate", `Bearer`)
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodDelete {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &m) != nil || r.Header.Get("Mcp-Method") != m.Method {
		s.bad.Add(1)
	}
	if m.Method != "initialize" && r.Header.Get("Mcp-Session-Id") != "sess-1" {
		s.bad.Add(1)
	}
	switch m.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "sess-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"remote","version":"1"}}}`, m.ID)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\n", m.ID)
		fmt.Fprint(w, "data: \"result\":{\"tools\":[{\"name\":\"create_issue\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"get_issue\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n")
	default:
		http.Error(w, "no", http.StatusBadRequest)
	}
}

// TestPolicyCheckGateway: verity policy check -config lists three
// upstreams at once — a stdio server (two pages), a stdio server given
// only its allow-listed environment and a secret, and a streamable HTTP
// server over TLS verified with the file's ca_file and reached with a
// header secret — names their tools as the gateway does (server__tool),
// and lints the policy against them, a rule's server included; a server
// it cannot list is named and the check exits 2.
func TestPolicyCheckGateway(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	write("files.sh", fakeServer)
	write("env.sh", envServer)
	write("token", "s3cret\n")
	write("key", "k3y\n")
	write("wrong-key", "nope\n")
	remote := &remoteServer{}
	srv := httptest.NewTLSServer(remote)
	defer srv.Close()
	write("ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	t.Setenv("GW_PARENT_ONLY", "leaked")

	servers := func(extra string) string {
		return `[
		  {"name": "files", "command": ["sh", "files.sh"], "dir": "` + dir + `", "env": ["PATH"]},
		  {"name": "env", "command": ["sh", "env.sh"], "dir": ".", "env": ["PATH"], "set_env": {"TOKEN": {"file": "token"}}},
		  {"name": "remote", "url": "` + srv.URL + `/mcp", "ca_file": "ca.pem",
		   "auth": {"kind": "header", "header": "X-Api-Key", "value": {"file": "key"}}}` + extra + `]`
	}
	gw := func(name, policy, extra string) string {
		write(name+".policy.json", policy)
		return write(name+".json", `{"version": 1, "policy": "`+name+`.policy.json", "servers": `+servers(extra)+`}`)
	}
	clean := `{"version": 2, "budget": "10", "min_cost": "0.001", "tools": [
	  {"match": "*__write_file", "server": "files", "cost": "1"},
	  {"match": "files__*", "cost": "0.5"},
	  {"match": "env__tok-s3cret-", "cost": "1"},
	  {"match": "remote__*", "cost": "1"}]}`

	r := verity(t, "policy", "check", "-config", gw("clean", clean, ""))
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "server files (command sh): 3 tools")
	assert.Contains(t, r.stdout, "server env (command sh): 1 tools")
	assert.Contains(t, r.stdout, "server remote ("+srv.URL+"/mcp): 2 tools")
	assert.Contains(t, r.stdout, "4 rules, 6 tools on 3 of 3 servers")
	assert.Contains(t, r.stdout, "  ok\n")
	assert.Zero(t, remote.bad.Load(), "every request carried the session and its Mcp-Method")

	// Each server's pins lock file: the same tools are clean, another
	// server's tools (pinned under this one's name) are drift.
	pinned := filepath.Join(dir, "files.pins.json")
	r = verity(t, "pin", "-o", pinned, "-server", "files", "--", "sh", filepath.Join(dir, "files.sh"))
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	other := filepath.Join(dir, "other.pins.json")
	r = verity(t, "pin", "-o", other, "-server", "files", "--", "sh", filepath.Join(dir, "env.sh"))
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	write("pinned.policy.json", clean)
	pinnedGW := func(pins string) string {
		return write("pinned.json", `{"version": 1, "policy": "pinned.policy.json", "servers": [
		  {"name": "files", "command": ["sh", "files.sh"], "dir": "`+dir+`", "env": ["PATH"], "pins": "`+pins+`"}]}`)
	}
	r = verity(t, "policy", "check", "-config", pinnedGW("files.pins.json"))
	assert.NotContains(t, r.stdout, "pins:", r.stdout+r.stderr)
	r = verity(t, "policy", "check", "-config", pinnedGW("other.pins.json"))
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "server files: pins: tool read_text_file")

	// A rule's server decides which tools it may match.
	problems := `{"version": 2, "budget": "10", "min_cost": "0.001", "tools": [
	  {"match": "*__get_issue", "server": "files", "cost": "1"},
	  {"match": "files__*", "cost": "0.5"}]}`
	r = verity(t, "policy", "check", "-config", gw("problems", problems, ""))
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "rule #0 (*__get_issue) matches no tool the upstream lists")
	assert.Contains(t, r.stdout, "no rule matches env__tok-s3cret-, remote__create_issue, remote__get_issue")

	// Servers the check cannot list: named, one line each, exit 2.
	r = verity(t, "policy", "check", "-config", gw("unlisted", clean, `,
	  {"name": "tickets", "url": "https://127.0.0.1:1/mcp", "auth": {"kind": "token_exchange", "token_url": "https://idp/t",
	   "client_id": "gw", "client_secret": {"env": "GW_SECRET"}, "audience": "tickets"}},
	  {"name": "wrong", "url": "`+srv.URL+`/mcp", "ca_file": "ca.pem", "auth": {"kind": "header", "header": "X-Api-Key", "value": {"file": "wrong-key"}}},
	  {"name": "nokey", "url": "`+srv.URL+`/mcp", "ca_file": "ca.pem", "auth": {"kind": "header", "header": "X-Api-Key", "value": {"file": "missing"}}},
	  {"name": "untrusted", "url": "`+srv.URL+`/mcp", "auth": {"kind": "header", "header": "X-Api-Key", "value": {"file": "key"}}}`))
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "6 tools on 3 of 7 servers")
	assert.Contains(t, r.stdout, "not listed: server tickets: auth kind token_exchange cannot be used by the check")
	assert.Contains(t, r.stdout, "not listed: server wrong: initialize: HTTP 401: the server refused the gateway's credentials")
	assert.Contains(t, r.stdout, "not listed: server nokey: auth.value: file "+filepath.Join(dir, "missing")+": no such file or directory")
	assert.Contains(t, r.stdout, "not listed: server untrusted: initialize: ")
	assert.Contains(t, r.stdout, "certificate")
	assert.Contains(t, r.stderr, "4 of 7 servers could not be listed: the check is incomplete")

	// A gateway file that is not valid: every problem, exit 2.
	bad := write("bad.json", `{"version": 1, "policy": "p.json", "servers": [{"name": "A_b", "command": ["x"], "url": "http://example.com"}]}`)
	r = verity(t, "policy", "check", "-config", bad)
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "/servers/0/name: name:")
	assert.Contains(t, r.stderr, "3 violations")
	r = verity(t, "policy", "check", "-config", bad, "extra")
	require.Equal(t, exitUsage, r.code)
	assert.True(t, strings.Contains(r.stderr, "want 0 file argument"), r.stderr)
}

// TestHTTPClientRefusesRedirects: a server that redirects is not
// followed, so that the header secret never reaches another address.
func TestHTTPClientRefusesRedirects(t *testing.T) {
	var leaked atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("X-Api-Key") != "")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusTemporaryRedirect))
	defer srv.Close()
	_, err := listHTTP(t.Context(), srv.URL, nil, http.Header{"X-Api-Key": {"k3y"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not followed")
	assert.False(t, leaked.Load())
}

// TestLintServerRuleWithoutGateway: checked against one upstream, a rule
// naming a server never applies, and the finding says why.
func TestLintServerRuleWithoutGateway(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"version": 2, "budget": "1", "min_cost": "0.001", "tools": [
	  {"match": "read_text_file", "server": "files", "cost": "0.001"}, {"match": "*", "cost": "0.001"}]}`), 0o600))
	tools := filepath.Join(dir, "tools.json")
	require.NoError(t, os.WriteFile(tools, []byte(`{"tools": [{"name": "read_text_file"}]}`), 0o600))
	r := verity(t, "policy", "check", p, "-tools", tools)
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, `rule #0 (read_text_file) names server "files": it applies only to a gateway's calls (check it with -config)`)
}
