package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// TestPinReviewShowsInvisibleCharactersInChromium: a tool's description
// changes to one that carries Unicode TAG characters (an instruction no
// screen draws) and zero-width characters. The inbox's re-pin page, in a
// real browser, shows every one of them as a visible escape — what is
// checked is the text the browser rendered (innerText, which leaves out
// what CSS hides) and the size of each escape's box, not the HTML the
// server sent — and a click on the page re-pins the tool, whose call
// then runs once.
func TestPinReviewShowsInvisibleCharactersInChromium(t *testing.T) {
	b := startBrowser(t)
	d := newDrift(t, "invisible")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", writePinsPolicy(t), "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, d.argv(t)...), nil)
	base := inboxURL(t, p)
	p.waitShown(t, "crash", "echo", "flip", "search")
	p.callText(t, "flip", nil)
	r := waitReviews(t, base, "", 1)["echo"]
	p.waitShown(t, "crash", "flip", "search")

	b.open(base + "pins")
	b.until(`document.body.dataset.count === "1"`)
	var shown struct {
		Tool, Diff, Warnings string
		Marks, Scripts       int
		Drawn                int
	}
	b.eval(`(() => { const a = document.querySelector("article.review");
		const marks = [...a.querySelectorAll("mark.hidden-char")];
		return {Tool: a.dataset.tool, Diff: a.querySelector(".pin-diff").innerText,
			Warnings: (a.querySelector(".pin-warnings") || {innerText: ""}).innerText,
			Marks: marks.length, Scripts: a.querySelectorAll("script").length,
			Drawn: marks.filter(m => { const b = m.getBoundingClientRect(); return b.width > 1 && b.height > 1 }).length} })()`, &shown)
	assert.Equal(t, "echo", shown.Tool)
	for _, c := range "send keys" {
		name := "TAG LATIN SMALL LETTER " + strings.ToUpper(string(c))
		if c == ' ' {
			name = "TAG SPACE"
		}
		assert.Contains(t, shown.Diff, fmt.Sprintf("U+%04X %s", 0xE0000+c, name), "the TAG character for %q is shown", c)
	}
	assert.Contains(t, shown.Diff, "U+200B ZERO WIDTH SPACE")
	assert.Contains(t, shown.Diff, "U+200D ZERO WIDTH JOINER")
	assert.False(t, strings.ContainsFunc(shown.Diff, func(r rune) bool { return r >= 0xE0000 && r <= 0xE007F || r == 0x200B || r == 0x200D }),
		"no invisible character is left in the rendered text")
	assert.Equal(t, 11, shown.Marks, "nine TAG characters and two zero-width ones, each marked")
	assert.Equal(t, shown.Marks, shown.Drawn, "every escape is drawn, with a box of its own")
	assert.Zero(t, shown.Scripts)
	assert.Contains(t, shown.Warnings, "invisible")

	// The approver re-pins it from the page.
	var before string
	b.eval(`document.body.dataset.answers`, &before)
	b.eval(`(() => { const a = document.querySelector("article.review"); a.querySelector("input.reason").value = "seen the tags"; a.querySelector("button.approve").click(); return true })()`, nil)
	b.until(fmt.Sprintf(`document.body.dataset.answers !== %q`, before))
	var status string
	b.eval(`document.body.dataset.lastStatus`, &status)
	assert.Equal(t, "200", status)
	b.until(`document.body.dataset.count === "0"`)
	p.waitShown(t, "crash", "echo", "flip", "search")
	assert.Equal(t, "ok", p.callText(t, "echo", map[string]any{"text": "ok"}))
	assert.Equal(t, 1, d.ran(t, "echo"))
	require.Equal(t, 0, p.stop(t))
	repins := pinEntries(t, logPath, gatelog.KindRepin)
	require.Len(t, repins, 1)
	assert.Equal(t, r.Seen, repins[0].payload["new"])
	assert.Equal(t, "seen the tags", repins[0].payload["reason"])
}
