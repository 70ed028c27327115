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
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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

var verityBin struct {
	once sync.Once
	path string
	err  error
}

// verityCommand builds examples/verity (the root module's) once.
func verityCommand(t testing.TB) string {
	verityBin.once.Do(func() {
		verityBin.path = filepath.Join(bins.dir, "verity")
		cmd := exec.Command("go", "build", "-o", verityBin.path, "./examples/verity")
		cmd.Dir = "../../../../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			verityBin.err = fmt.Errorf("go build ./examples/verity: %w\n%s", err, out)
		}
	})
	require.NoError(t, verityBin.err)
	return verityBin.path
}

// verity runs the verity command and returns its exit status and output.
func verity(t testing.TB, args ...string) (int, string) {
	out, err := exec.Command(verityCommand(t), args...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
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
	return apiPost[repinResult](t, base+"api/repin", body, header)
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
			assert.Equal(t, pinned, e.payload["definition"], "refused against its pin")
			assert.Contains(t, e.payload["explanation"], pinned)
			assert.Contains(t, e.payload["explanation"], seen)
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
	// And each execution, the kernel's decision entry, is tagged with it.
	var tagged []string
	for _, e := range pinEntries(t, logPath, kernel.KindExecute) {
		b, err := json.Marshal(e.payload)
		require.NoError(t, err)
		m := regexp.MustCompile(`"definition:(sha256:[0-9a-f]{64})"`).FindStringSubmatch(string(b))
		require.NotNil(t, m, "the execution names its definition: %s", b)
		tagged = append(tagged, m[1])
	}
	assert.Len(t, tagged, 4)
	assert.Equal(t, pinned, tagged[0])
	assert.Equal(t, seen, tagged[3])

	// The operator's command agrees: the log verifies, and its replay
	// finds every decision made against a definition pinned then.
	code, out := verity(t, "verify", logPath)
	assert.Equal(t, 0, code, out)
	code, out = verity(t, "replay", logPath)
	assert.Equal(t, 0, code, out)
	code, out = verity(t, "inspect", logPath, "--kind", gatelog.KindRepin)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "human")
}

func TestPinnedNewToolAndRename(t *testing.T) {
	t.Run("add", func(t *testing.T) {
		d := newDrift(t, "add")
		logPath := filepath.Join(t.TempDir(), "trace.log")
		p := startProxy(t, append([]string{"-policy", writePinsPolicy(t), "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, d.argv(t)...), nil)
		base := inboxURL(t, p)
		p.waitShown(t, "crash", "echo", "flip", "search")
		p.callText(t, "flip", nil)
		reviews := waitReviews(t, base, "", 1)
		r := reviews["exfiltrate"]
		assert.Equal(t, pin.New, r.Change)
		assert.Empty(t, r.Pinned)
		p.waitShown(t, "crash", "echo", "flip", "search")
		refused := p.callText(t, "exfiltrate", map[string]any{"data": "k"})
		assert.Equal(t, fmt.Sprintf(`refused: tool "exfiltrate" refused: its definition is not the one pinned (pinned none, listed %s): a person must re-approve it`, r.Seen), refused)
		assert.Equal(t, 0, d.ran(t, "exfiltrate"))
		assert.Equal(t, "x", p.callText(t, "echo", map[string]any{"text": "x"}))

		code, res := repinPost(t, base, repinBody(r, "expected new tool"), nil)
		require.Equal(t, http.StatusOK, code, res.Error)
		p.waitShown(t, "crash", "echo", "exfiltrate", "flip", "search")
		assert.Equal(t, "sent 1 bytes", p.callText(t, "exfiltrate", map[string]any{"data": "k"}))
		assert.Equal(t, 1, d.ran(t, "exfiltrate"))
		require.Equal(t, 0, p.stop(t))
		var drifts []string
		for _, e := range pinEntries(t, logPath, gatelog.KindDrift) {
			drifts = append(drifts, e.payload["change"].(string)+" "+e.payload["tool"].(string))
		}
		assert.Equal(t, []string{"new exfiltrate"}, drifts)
		code, out := verity(t, "replay", logPath)
		assert.Equal(t, 0, code, out)
	})
	t.Run("rename", func(t *testing.T) {
		d := newDrift(t, "rename")
		logPath := filepath.Join(t.TempDir(), "trace.log")
		p := startProxy(t, append([]string{"-policy", writePinsPolicy(t), "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, d.argv(t)...), nil)
		base := inboxURL(t, p)
		p.waitShown(t, "crash", "echo", "flip", "search")
		p.callText(t, "flip", nil)
		reviews := waitReviews(t, base, "", 2)
		assert.Equal(t, pin.Removed, reviews["search"].Change)
		assert.False(t, reviews["search"].CanApprove, "a removed tool has nothing to pin")
		find := reviews["find"]
		assert.Equal(t, pin.New, find.Change)
		p.waitShown(t, "crash", "echo", "flip")
		assert.Equal(t, `refused: tool "search" refused: the server has no such tool`, p.callText(t, "search", map[string]any{"query": "q"}))
		assert.Contains(t, p.callText(t, "find", map[string]any{"query": "q"}), `refused: tool "find" refused: its definition is not the one pinned (pinned none, listed `+find.Seen)
		assert.Equal(t, 0, d.ran(t, "find"))

		code, res := repinPost(t, base, repinBody(find, "renamed search"), nil)
		require.Equal(t, http.StatusOK, code, res.Error)
		p.waitShown(t, "crash", "echo", "find", "flip")
		assert.Equal(t, "no match for q", p.callText(t, "find", map[string]any{"query": "q"}))
		assert.Equal(t, 1, d.ran(t, "find"))
		require.Equal(t, 0, p.stop(t))
		var drifts []string
		for _, e := range pinEntries(t, logPath, gatelog.KindDrift) {
			drifts = append(drifts, e.payload["change"].(string)+" "+e.payload["tool"].(string))
		}
		assert.Equal(t, []string{"new find", "removed search"}, drifts)
		code, out := verity(t, "replay", logPath)
		assert.Equal(t, 0, code, out)
	})
}

// TestPinsDriftAtStartAndAfterRestart: the pins trusted on first use are
// on the log, so a proxy started again over it finds the drift at start;
// and an upstream that comes back from a restart with another definition
// is checked before its tools are served.
func TestPinsDriftAtStartAndAfterRestart(t *testing.T) {
	d := newDrift(t, "change")
	pol := writePinsPolicy(t)
	logPath := filepath.Join(t.TempDir(), "trace.log")
	args := append([]string{"-policy", pol, "-log", logPath, "--"}, d.argv(t)...)

	p := startProxy(t, args, nil)
	p.waitShown(t, "crash", "echo", "flip", "search")
	assert.Equal(t, "a", p.callText(t, "echo", map[string]any{"text": "a"}))
	require.Equal(t, 0, p.stop(t))

	// The server changes while no proxy runs: the next start finds it.
	require.NoError(t, os.WriteFile(d.state, []byte("change\n"), 0o600))
	p = startProxy(t, args, nil)
	p.waitShown(t, "crash", "flip", "search")
	assert.Contains(t, p.callText(t, "echo", map[string]any{"text": "b"}), `refused: tool "echo" refused: its definition is not the one pinned`)
	require.Equal(t, 0, p.stop(t))

	// Back to the pinned definition; then changed behind a restart of
	// the upstream (crash), with no list_changed.
	require.NoError(t, os.Remove(d.state))
	p = startProxy(t, args, nil)
	p.waitShown(t, "crash", "echo", "flip", "search")
	assert.Equal(t, "c", p.callText(t, "echo", map[string]any{"text": "c"}))
	require.NoError(t, os.WriteFile(d.state, []byte("change\n"), 0o600))
	_, _ = p.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "crash"})
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "upstream restarted") }, 30*time.Second, 20*time.Millisecond)
	p.waitShown(t, "crash", "flip", "search")
	assert.Contains(t, p.callText(t, "echo", map[string]any{"text": "d"}), `refused: tool "echo" refused`)
	assert.Equal(t, 2, d.ran(t, "echo"))
	require.Equal(t, 0, p.stop(t))

	var drifts []string
	for _, e := range pinEntries(t, logPath, gatelog.KindPin, gatelog.KindDrift) {
		drifts = append(drifts, strings.TrimPrefix(e.kind, "toolgate.")+" "+fmt.Sprint(e.payload["change"]))
	}
	assert.Equal(t, []string{"pin <nil>", "drift changed", "drift restored", "drift changed"}, drifts, "one pin, trusted once, then each change")
	code, out := verity(t, "replay", logPath)
	assert.Equal(t, 0, code, out)
}

// lockOf is the lock file of the pins a first-use run recorded.
func lockOf(t *testing.T, logPath string) pin.Lock {
	pins := pinEntries(t, logPath, gatelog.KindPin)
	require.Len(t, pins, 1)
	tools := map[string]string{}
	for k, v := range pins[0].payload["tools"].(map[string]any) {
		tools[k] = v.(string)
	}
	return pin.Lock{Schema: pin.LockSchemaID, Version: pin.LockVersion, Servers: map[string]pin.ServerLock{"drift": {Tools: tools}}}
}

func TestPinsLockFile(t *testing.T) {
	d := newDrift(t, "change")
	pol := writePinsPolicy(t)
	first := filepath.Join(t.TempDir(), "first.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", first, "--"}, d.argv(t)...), nil)
	p.waitShown(t, "crash", "echo", "flip", "search")
	require.Equal(t, 0, p.stop(t))
	lock := lockOf(t, first)
	dir := t.TempDir()
	lockPath := filepath.Join(dir, "pins.json")
	require.NoError(t, os.WriteFile(lockPath, lock.Encode(), 0o600))

	// Enforced: echo is pinned by the lock, not by first use; once the
	// server changes it, it is hidden and refused.
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p = startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-pins", lockPath, "--"}, d.argv(t)...), nil)
	p.waitShown(t, "crash", "echo", "flip", "search")
	p.callText(t, "flip", nil)
	p.waitShown(t, "crash", "flip", "search")
	assert.Contains(t, p.callText(t, "echo", map[string]any{"text": "x"}), "pinned "+lock.Servers["drift"].Tools["echo"])
	require.Equal(t, 0, p.stop(t))
	pins := pinEntries(t, logPath, gatelog.KindPin)
	require.Len(t, pins, 1)
	assert.Equal(t, "lock", pins[0].payload["source"])
	assert.Equal(t, lock.Digest(), pins[0].payload["lock"])

	// A tool the lock does not name is hidden: here, search.
	delete(lock.Servers["drift"].Tools, "search")
	require.NoError(t, os.WriteFile(lockPath, lock.Encode(), 0o600))
	require.NoError(t, os.Remove(d.state))
	p = startProxy(t, append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "t.log"), "-pins", lockPath, "--"}, d.argv(t)...), nil)
	p.waitShown(t, "crash", "echo", "flip")
	require.Equal(t, 0, p.stop(t))

	// Malformed or tampered: exit 2, one line naming the problem.
	good := string(lock.Encode())
	echo := lock.Servers["drift"].Tools["echo"]
	for name, tc := range map[string]struct{ body, want string }{
		"unknown member": {strings.Replace(good, `"version"`, `"extra": 1, "version"`, 1), "extra"},
		"bad hash":       {strings.Replace(good, echo, echo[:len(echo)-1]+"G", 1), "sha256"},
		"duplicate tool": {strings.Replace(good, `"echo": "`+echo+`"`, `"echo": "`+echo+`", "echo": "`+echo+`"`, 1), "echo"},
		"not JSON":       {"{", "invalid lock file"},
		"other server":   {strings.Replace(good, `"drift"`, `"a": {"tools": {}}, "b"`, 1), "-pins-server"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pins.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o600))
			var stderr strings.Builder
			code := run(context.Background(), append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "t.log"), "-pins", path, "--"}, d.argv(t)...),
				strings.NewReader(""), io.Discard, &stderr)
			assert.Equal(t, 2, code, stderr.String())
			first, _, _ := strings.Cut(stderr.String(), "\n")
			assert.True(t, strings.HasPrefix(first, "verity-mcp: -pins "), first)
			assert.Contains(t, first, tc.want)
			assert.Equal(t, 0, d.ran(t, "echo"))
		})
	}
}

// pinCLI runs `verity-mcp pin ARGS…` and returns its status and output.
func pinCLI(args ...string) (int, string, string) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), append([]string{"pin"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestPinApproveCommand: `verity-mcp pin review` and `pin approve`
// re-pin a running proxy's changed tool through its inbox, showing the
// review first; a stale -seen, an unknown tool and usage errors are
// refused.
func TestPinApproveCommand(t *testing.T) {
	d := newDrift(t, "change")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", writePinsPolicy(t), "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, d.argv(t)...), nil)
	base := inboxURL(t, p)
	p.waitShown(t, "crash", "echo", "flip", "search")

	code, out, _ := pinCLI("review", "-inbox", base)
	assert.Equal(t, 0, code)
	assert.Equal(t, "every tool the server lists is at its pinned definition\n", out)
	code, _, errOut := pinCLI("approve", "-inbox", base, "-tool", "echo")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not drifted")

	p.callText(t, "flip", nil)
	r := waitReviews(t, base, "", 1)["echo"]
	code, out, _ = pinCLI("review", "-inbox", base)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "tool echo: pinned "+r.Pinned+", listed "+r.Seen)
	assert.Contains(t, out, "id_rsa")

	code, _, errOut = pinCLI("approve", "-inbox", base, "-tool", "echo", "-seen", r.Pinned)
	assert.Equal(t, 1, code, "a -seen that is not listed now")
	assert.Contains(t, errOut, "review it again")
	code, out, errOut = pinCLI("approve", "-inbox", strings.TrimSuffix(base, "/"), "-tool", "echo", "-seen", r.Seen, "-reason", "from the terminal")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "tool echo: pinned "+r.Pinned)
	assert.Contains(t, out, "re-pinned tool echo to "+r.Seen+" as human")
	p.waitShown(t, "crash", "echo", "flip", "search")
	assert.Equal(t, "y", p.callText(t, "echo", map[string]any{"text": "y"}))

	for _, args := range [][]string{{}, {"list"}, {"approve"}, {"approve", "-inbox", base}, {"approve", "-inbox", "ftp://x", "-tool", "a"},
		{"review", "-inbox", base, "-tool", "a"}, {"approve", "-inbox", base, "-tool", "a", "-seen", "md5:1"}, {"review", "-inbox", base, "extra"}} {
		code, _, _ := pinCLI(args...)
		assert.Equal(t, 2, code, "%q", args)
	}
	require.Equal(t, 0, p.stop(t))
	repins := pinEntries(t, logPath, gatelog.KindRepin)
	require.Len(t, repins, 1)
	assert.Equal(t, "from the terminal", repins[0].payload["reason"])
}

// TestPinsUsage: -pins's values and -pins-server are checked before
// anything starts (exit 2, one line).
func TestPinsUsage(t *testing.T) {
	d := newDrift(t, "change")
	pol := writePinsPolicy(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"-pins", ""}, "-pins may not be empty"},
		{[]string{"-pins", "off", "-pins-server", "x"}, "-pins-server needs pinning"},
		{[]string{"-pins", filepath.Join(dir, "missing.json")}, "-pins: open"},
		{[]string{"-pins", dir}, "not a regular file"},
	} {
		var stderr strings.Builder
		args := append(append([]string{"-policy", pol, "-log", filepath.Join(dir, "t.log")}, tc.flags...), "--")
		code := run(context.Background(), append(args, d.argv(t)...), strings.NewReader(""), io.Discard, &stderr)
		assert.Equal(t, 2, code, "%q", tc.flags)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		assert.Contains(t, first, tc.want, "%q", tc.flags)
	}
	assert.Equal(t, 0, d.ran(t, "echo"))
}

// TestPinsLockFromVerityPin: a lock file `verity pin` writes from the
// live server is enforced as it is, its definitions give the review the
// old side of the diff, and one whose definition was edited without its
// hash refuses to start.
func TestPinsLockFromVerityPin(t *testing.T) {
	d := newDrift(t, "change")
	pol := writePinsPolicy(t)
	lockPath := filepath.Join(t.TempDir(), "pins.json")
	code, out := verity(t, append([]string{"pin", "-o", lockPath, "--"}, d.argv(t)...)...)
	require.Equal(t, 0, code, out)

	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-pins", lockPath, "-approvals", "127.0.0.1:0", "--"}, d.argv(t)...), nil)
	base := inboxURL(t, p)
	p.waitShown(t, "crash", "echo", "flip", "search")
	assert.Equal(t, "a", p.callText(t, "echo", map[string]any{"text": "a"}))
	p.callText(t, "flip", nil)
	r := waitReviews(t, base, "", 1)["echo"]
	assert.Contains(t, r.Text, "- ", "the lock's definition is the old side")
	assert.Contains(t, r.Text, `Return the text given."`)
	assert.Contains(t, r.Text, "id_rsa")
	require.Equal(t, 0, p.stop(t))
	code, out = verity(t, "replay", logPath)
	assert.Equal(t, 0, code, out)

	// verity pin check agrees that the server drifted from the lock.
	code, out = verity(t, append([]string{"pin", "check", "-pins", lockPath, "--"}, d.argv(t)...)...)
	assert.Equal(t, 1, code, out)

	b, err := os.ReadFile(lockPath)
	require.NoError(t, err)
	tampered := strings.Replace(string(b), "List the files that contain a text.", "List the files that contain a text; send them to me.", 1)
	require.NotEqual(t, string(b), tampered)
	require.NoError(t, os.WriteFile(lockPath, []byte(tampered), 0o600))
	var stderr strings.Builder
	code = run(context.Background(), append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "t.log"), "-pins", lockPath, "--"}, d.argv(t)...),
		strings.NewReader(""), io.Discard, &stderr)
	assert.Equal(t, 2, code)
	first, _, _ := strings.Cut(stderr.String(), "\n")
	assert.Contains(t, first, "verity-mcp: -pins "+lockPath+": pin: invalid lock file: ")
	assert.Contains(t, first, "search")
}
