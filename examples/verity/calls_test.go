package main

// The tool calls table: TestViewToolCalls reads /api/calls for a gate's
// log; TestViewToolGateInChromium drives the page in headless Chromium and
// reads the DOM its JavaScript built (the table near the top, refusals
// coloured, empty cards hidden, the budget chart's axes labelled, a small
// spend drawn at its own scale), then checks a screenshot.

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
)

type callsPage struct {
	Total  int            `json:"total"`
	Rows   []callRow      `json:"rows"`
	Counts map[string]int `json:"counts"`
}

func TestViewToolCalls(t *testing.T) {
	base, _ := startView(t, gateLog(t))
	var page callsPage
	getJSON(t, base+"api/calls", &page)
	require.Equal(t, 4, page.Total, "read_file, format_disk, delete_file, send")
	byTool := map[string]callRow{}
	for _, r := range page.Rows {
		byTool[r.Tool] = r
		assert.Equal(t, "agent-1", r.Caller)
		assert.NotEmpty(t, r.Time)
		assert.NotEmpty(t, r.CallID)
	}
	assert.Equal(t, callRow{Seq: byTool["read_file"].Seq, Time: byTool["read_file"].Time, Caller: "agent-1", Tool: "read_file", CallID: byTool["read_file"].CallID,
		Verdict: "allowed", Rule: "#0", Cost: "0.1", Outcome: "ok"}, byTool["read_file"])
	f := byTool["format_disk"]
	assert.Equal(t, "refused", f.Verdict)
	assert.Equal(t, "0", f.Cost)
	assert.Contains(t, f.Reason, `tool "format_disk" is not in the gate's catalogue`)
	d := byTool["delete_file"]
	assert.Equal(t, "approved", d.Verdict)
	assert.Equal(t, []string{"human"}, d.Approver, "the approver is the human, not the caller")
	assert.Equal(t, "#1", d.Rule)
	assert.Equal(t, "1", d.Cost)
	s := byTool["send"]
	assert.Equal(t, "allowed", s.Verdict)
	assert.Equal(t, "0", s.Cost, "refunded on error: the result's charge")
	assert.Equal(t, "failed: smtp down", s.Outcome)
	assert.Equal(t, map[string]int{"allowed": 2, "approved": 1, "refused": 1}, page.Counts)

	// A call the kernel would reject (over budget) is a refusal, named by
	// its rule, with the kernel's reason once; nobody is asked about it.
	base, _ = startView(t, gateLogWith(t, kernel.Unit))
	page = callsPage{} // a member left out is not the first page's
	getJSON(t, base+"api/calls", &page)
	var rejected *callRow
	for i, r := range page.Rows {
		if r.Tool == "delete_file" {
			rejected = &page.Rows[i]
		}
	}
	require.NotNil(t, rejected)
	assert.Equal(t, "refused", rejected.Verdict)
	assert.Equal(t, "#1", rejected.Rule)
	assert.Equal(t, "0", rejected.Cost)
	assert.Equal(t, `tool "delete_file" (rule #1, kernel): action "delete_file" rejected: budget: cost 1, remaining 0.9; nobody was asked to approve it`, rejected.Reason)
	assert.Empty(t, rejected.Approver, "refused by the budget before a human was asked")

	// A log without a gate has no tool calls.
	path, _ := fileLog(t, 40)
	base, _ = startView(t, path)
	getJSON(t, base+"api/calls", &page)
	assert.Zero(t, page.Total)
	assert.Empty(t, page.Rows)
}

func TestViewToolGateInChromium(t *testing.T) {
	bin := chromium(t)
	base, reqs := startView(t, gateLogWith(t, 100*kernel.Unit)) // a spend of 3.1 at most: small
	dom := browse(t, bin, base, "--dump-dom")
	require.Contains(t, dom, `data-ready="true"`, "the page's script finished loading its data")

	// The table, above the budget chart, one row per call.
	calls := regexp.MustCompile(`<section id="calls" class="card wide">`).FindStringIndex(dom)
	require.NotNil(t, calls, "the tool calls card is shown")
	assert.Less(t, calls[0], regexp.MustCompile(`<section id="budget"`).FindStringIndex(dom)[0], "the tool calls come before the charts")
	assert.Equal(t, 4, count(dom, `<tr class="call `))
	assert.Regexp(t, `<tr class="call r-refused" data-seq="\d+"[^>]*><td>\d+</td><td>[^<]+</td><td>agent-1</td><td class="tool">format_disk</td><td class="verdict"><span class="v v-refused">refused</span><div class="why">tool "format_disk" is not in the gate's catalogue`, dom)
	assert.Regexp(t, `<td class="tool">delete_file</td><td class="verdict"><span class="v v-approved">approved</span></td><td>#1</td><td class="num">1</td><td>human</td>`, dom)
	assert.Regexp(t, `<td class="tool">send</td><td class="verdict"><span class="v v-allowed">allowed</span><div class="why">tool failed: smtp down</div></td><td>#2</td><td class="num">0</td><td>—</td>`, dom)
	assert.Contains(t, dom, `<span id="calls-counts" class="counts">4: 2 allowed, 1 approved, 1 refused</span>`)

	// Cards without data are hidden; the ones with data are shown.
	assert.Contains(t, dom, `<section id="belief" class="card wide" hidden="">`, "no belief session: no card")
	assert.Contains(t, dom, `<section id="budget" class="card wide">`)
	assert.Contains(t, dom, `<section id="claims" class="card wide">`, "the approval's claims decisions")

	// The budget chart: labelled axes, ticks between the ends, and a spend
	// of at most 3.1 out of 100 drawn at its own scale, every point marked.
	assert.Equal(t, 1, count(dom, `class="budget-chart"`))
	assert.Contains(t, dom, `class="axis-label">log entry (seq)</text>`)
	assert.Regexp(t, `class="axis-label"[^>]*>units</text>`, dom)
	assert.GreaterOrEqual(t, count(dom, `class="x-tick"`), 3, "x ticks between the two ends")
	assert.Contains(t, dom, "scaled to the spend; the limit, 100, is above it")
	assert.NotContains(t, dom, `class="series series-limit"`, "the limit is named, not drawn flat at the top")
	assert.GreaterOrEqual(t, count(dom, `class="dot series-net"`), 4)
	// The highest net point is drawn in the upper half of the plot, not on zero.
	ys := regexp.MustCompile(`class="dot series-net" cx="[0-9.]+" cy="([0-9.]+)"`).FindAllStringSubmatch(dom, -1)
	top := 1e9
	for _, m := range ys {
		y, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		top = min(top, y)
	}
	assert.Less(t, top, 60.0, "the spend rises to the top of the plot (y from 10 to 206), not flat on the x axis")
	checkRequests(t, base, reqs)

	shot := filepath.Join(t.TempDir(), "toolgate.png")
	browse(t, bin, base, "--screenshot="+shot)
	checkNotBlank(t, shot)
	if dir := os.Getenv("VERITY_VIEW_SCREENSHOT_DIR"); dir != "" {
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "toolgate.png"), b, 0o644))
	}
}
