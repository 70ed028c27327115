package main

// Pinned tool definitions, end to end: the proxy in front of
// internal/driftserver, whose tools change while it runs (flip), with
// the approval inbox. What is checked is what the client is shown and
// answered, what the upstream ran (its journal), and what the log holds.
//
//   - A changed tool is hidden and refused, the others keep working, an
//     approver re-pins it at the inbox, and the call then runs once; the
//     log holds the first-use pin, the drift, the refusal, the re-pin
//     naming the approver, the pinned hash on every decision, and
//     verifies: TestPinnedChangeIsRefusedUntilRepinned.
//   - A new tool, and a renamed one, are hidden and refused until pinned:
//     TestPinnedNewToolAndRename.
//   - Drift is checked at start over the log's pins, and after an
//     upstream restart: TestPinsDriftAtStartAndAfterRestart.
//   - A lock file is enforced; a malformed or tampered one refuses to
//     start with one line: TestPinsLockFile.
//   - A re-pin is read strictly: TestDecodeRepin, FuzzDecodeRepin.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

var driftBin struct {
	once sync.Once
	path string
	err  error
}

// driftServer builds internal/driftserver once.
func driftServer(t testing.TB) string {
	driftBin.once.Do(func() {
		driftBin.path = filepath.Join(bins.dir, "driftserver")
		driftBin.err = goBuild(driftBin.path, "../../internal/driftserver")
	})
	require.NoError(t, driftBin.err)
	return driftBin.path
}

// pinsPolicy prices every tool of the driftserver at 0.1.
const pinsPolicy = `{
  "version": 1,
  "budget": "10",
  "min_cost": "0.01",
  "tools": [
    {"match": "echo", "cost": "0.1"}, {"match": "search", "cost": "0.1"}, {"match": "find", "cost": "0.1"},
    {"match": "flip", "cost": "0.1"}, {"match": "crash", "cost": "0.1"}, {"match": "exfiltrate", "cost": "0.1"}
  ]
}`

// drift is a driftserver in one mode: its journal and state file.
type drift struct {
	mode, journal, state string
}

func newDrift(t testing.TB, mode string) drift {
	dir := t.TempDir()
	return drift{mode: mode, journal: filepath.Join(dir, "journal"), state: filepath.Join(dir, "state")}
}

func (d drift) argv(t testing.TB) []string {
	return []string{driftServer(t), "-journal", d.journal, "-mode", d.mode, "-state", d.state}
}

// ran counts the upstream's executions of tool.
func (d drift) ran(t testing.TB, tool string) int {
	return upstream{journal: d.journal}.ran(t, tool)
}

func writePinsPolicy(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(p, []byte(pinsPolicy), 0o600))
	return p
}

// listed returns the names the proxy's client is shown.
func (p *proxy) listed(t testing.TB) []string {
	res, err := p.cs.ListTools(context.Background(), nil)
	require.NoError(t, err, "stderr:\n%s", p.stderr.String())
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// waitListed waits until the client is shown exactly names.
func (p *proxy) waitShown(t testing.TB, names ...string) {
	t.Helper()
	slices.Sort(names)
	var last []string
	ok := assert.Eventually(t, func() bool { last = p.listed(t); return slices.Equal(last, names) }, 30*time.Second, 20*time.Millisecond)
	if !ok {
		t.Fatalf("shown %v, want %v\nstderr:\n%s", last, names, p.stderr.String())
	}
}

// callText calls tool and returns its text, "refused: " first when it
// is an error.
func (p *proxy) callText(t testing.TB, tool string, args map[string]any) string {
	res := p.call(t, tool, args)
	if res.IsError {
		return "refused: " + text(res)
	}
	return text(res)
}

// pinsGet lists the inbox's drifted tools as token's principal.
func pinsGet(t testing.TB, base, token string) pinList {
	req, err := http.NewRequest("GET", base+"api/pins", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var l pinList
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
	return l
}

// waitReviews waits until the inbox lists n drifted tools.
func waitReviews(t testing.TB, base, token string, n int) map[string]pinReview {
	var l pinList
	require.Eventually(t, func() bool { l = pinsGet(t, base, token); return len(l.Reviews) == n }, 30*time.Second, 20*time.Millisecond)
	out := map[string]pinReview{}
	for _, r := range l.Reviews {
		out[r.Tool] = r
	}
	return out
}

// repinPost posts a re-pin and returns the status and result.
func repinPost(t testing.TB, base, body string, header map[string]string) (int, repinResult) {
	req, err := http.NewRequest("POST", base+"api/repin", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r repinResult
	_ = json.Unmarshal(b, &r)
	return resp.StatusCode, r
}

func repinBody(r pinReview, reason string) string {
	b, _ := json.Marshal(inboxRepin{Tool: r.Tool, Pinned: r.Pinned, Seen: r.Seen, Reason: reason})
	return string(b)
}

var hashRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// pinEntries reads a stopped proxy's log: every entry of the kinds given,
// in order, as kind and payload.
func pinEntries(t testing.TB, path string, kinds ...string) []logged {
	ro, err := trace.OpenFileReadOnly(path) // verifies the whole chain
	require.NoError(t, err)
	require.NoError(t, ro.Close())
	store, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	defer log.Close()
	_, err = log.Verify(context.Background())
	require.NoError(t, err, "the log verifies")
	var out []logged
	for e, err := range log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		if slices.Contains(kinds, e.Kind) {
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			out = append(out, logged{e.Kind, m})
		}
	}
	return out
}

type logged struct {
	kind    string
	payload map[string]any
}

func TestPinnedChangeIsRefusedUntilRepinned(t *testing.T) {
	d := newDrift(t, "change")
	pol := writePinsPolicy(t)
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, d.argv(t)...), nil)
	base := inboxURL(t, p)

	p.waitShown(t, "crash", "echo", "flip", "search")
	assert.Equal(t, "hello", p.callText(t, "echo", map[string]any{"text": "hello"}))
	assert.Empty(t, pinsGet(t, base, "").Reviews, "nothing drifted")

	// The server changes echo's description and says so.
	assert.Equal(t, "flipped (change)", p.callText(t, "flip", nil))
	p.waitShown(t, "crash", "flip", "search")
	refused := p.callText(t, "echo", map[string]any{"text": "again"})
	hashes := hashRE.FindAllString(refused, -1)
	require.Len(t, hashes, 2, refused)
	pinned, seen := hashes[0], hashes[1]
	assert.NotEqual(t, pinned, seen)
	assert.Equal(t, fmt.Sprintf(`refused: tool "echo" refused: its definition is not the one pinned (pinned %s, listed %s): a person must re-approve it`, pinned, seen), refused)
	assert.Equal(t, 1, d.ran(t, "echo"), "the refused call never reached the upstream")
	assert.Equal(t, "no match for x", p.callText(t, "search", map[string]any{"query": "x"}), "the rest of the server keeps working")

	reviews := waitReviews(t, base, "", 1)
	r := reviews["echo"]
	assert.Equal(t, pin.Changed, r.Change)
	assert.Equal(t, pinned, r.Pinned)
	assert.Equal(t, seen, r.Seen)
	assert.Contains(t, r.Text, "id_rsa", "the review shows the new description")
	assert.NotEmpty(t, r.Warnings, "an instruction to the model is warned about")
	assert.True(t, r.CanApprove)

	// A stale re-pin (hashes the approver did not review) is refused.
	stale := r
	stale.Seen = pinned
	code, res := repinPost(t, base, repinBody(stale, "no"), nil)
	assert.Equal(t, http.StatusConflict, code, res.Error)

	code, res = repinPost(t, base, repinBody(r, "reviewed the new wording"), nil)
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.Equal(t, seen, res.Pinned)
	p.waitShown(t, "crash", "echo", "flip", "search")
	assert.Equal(t, "again", p.callText(t, "echo", map[string]any{"text": "again"}))
	assert.Equal(t, 2, d.ran(t, "echo"), "the re-pinned call ran once")
	assert.Empty(t, pinsGet(t, base, "").Reviews)
	require.Equal(t, 0, p.stop(t))

	checkLog(t, p.stderr.String(), logPath, pol, "stdio", 4*kernel.Unit/10) // echo, flip, search, echo
	entries := pinEntries(t, logPath, gatelog.KindPin, gatelog.KindDrift, gatelog.KindRepin, gatelog.KindRefuse, gatelog.KindResult)
	var kinds []string
	for _, e := range entries {
		k := strings.TrimPrefix(e.kind, "toolgate.")
		switch e.kind {
		case gatelog.KindResult, gatelog.KindRefuse:
			k += " " + e.payload["tool"].(string)
		case gatelog.KindDrift:
			k += " " + e.payload["change"].(string)
		}
		kinds = append(kinds, k)
	}
	assert.Equal(t, []string{"pin", "result echo", "result flip", "drift changed", "refuse echo", "result search", "repin", "result echo"}, kinds)
	for _, e := range entries {
		switch {
		case e.kind == gatelog.KindPin:
			assert.Equal(t, "first_use", e.payload["source"])
			assert.Equal(t, pinned, e.payload["tools"].(map[string]any)["echo"])
		case e.kind == gatelog.KindRepin:
			assert.Equal(t, "human", e.payload["approver"], "the re-pin names its approver")
			assert.Equal(t, pinned, e.payload["old"])
			assert.Equal(t, seen, e.payload["new"])
			assert.Equal(t, "reviewed the new wording", e.payload["reason"])
		case e.kind == gatelog.KindRefuse:
			assert.Equal(t, gatemcp.ReasonDrift, e.payload["reason"])
			assert.Equal(t, pinned, e.payload["definition"])
		case e.kind == gatelog.KindResult && e.payload["tool"] == "echo":
			assert.Regexp(t, hashRE, e.payload["definition"], "every decision names its definition")
		case e.kind == gatelog.KindResult:
			assert.Regexp(t, hashRE, e.payload["definition"])
		}
	}
	// The two echo calls ran against the two pins, in order.
	var echoDefs []any
	for _, e := range entries {
		if e.kind == gatelog.KindResult && e.payload["tool"] == "echo" {
			echoDefs = append(echoDefs, e.payload["definition"])
		}
	}
	assert.Equal(t, []any{pinned, seen}, echoDefs)
}
