package main

// The page is checked twice: its JSON endpoints directly
// (TestViewEndpoints, TestViewTamperedSQLite, TestViewRefusedFile), and
// in a real browser (TestViewInChromium): Debian's chromium, headless,
// loads `verity view` on a generated log; the DOM its JavaScript built
// has the budget and belief charts, the timeline and the claims table, a
// tampered log shows its bad entry highlighted, a screenshot is not
// blank, and no request leaves 127.0.0.1 (the browser resolves every
// other host to nothing, the page lists what it loaded, and the server
// records every request).

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requests records every request the view server answered.
type requests struct {
	mu   sync.Mutex
	seen []*url.URL
	host []string
}

func (r *requests) add(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, req.URL)
	r.host = append(r.host, req.Host)
}

// startView runs `verity view` on src on a free loopback port until the
// test ends, and returns the page's URL.
func startView(t *testing.T, args ...string) (string, *requests) {
	t.Helper()
	reqs := &requests{}
	urls := make(chan string, 1)
	stop := make(chan struct{})
	done := make(chan result, 1)
	e := &env{requestLog: reqs.add, serve: func(u string) error {
		urls <- u
		<-stop
		return nil
	}}
	go func() { done <- verityEnv(t, e, append([]string{"view", "--addr", "127.0.0.1:0"}, args...)...) }()
	select {
	case u := <-urls:
		t.Cleanup(func() {
			close(stop)
			r := <-done
			assert.Equal(t, exitOK, r.code, r.stderr)
		})
		return u, reqs
	case r := <-done:
		t.Fatalf("view exited %d: %s", r.code, r.stderr)
	}
	return "", nil
}

func getJSON(t *testing.T, u string, v any) *http.Response {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	return resp
}

type entriesPage struct {
	Total  int   `json:"total"`
	Offset int   `json:"offset"`
	Rows   []row `json:"rows"`
}

func TestViewEndpoints(t *testing.T) {
	path, shape := fileLog(t, 300)
	base, _ := startView(t, path)

	var st status
	resp := getJSON(t, base+"api/status", &st)
	assert.Equal(t, contentSecurityPolicy, resp.Header.Get("Content-Security-Policy"))
	assert.True(t, st.OK)
	assert.Nil(t, st.BadSeq)
	assert.Equal(t, st.Entries, uint64(st.Rows))
	assert.Equal(t, shape.rolledBack, st.Kinds["kernel.rollback"])

	var page entriesPage
	getJSON(t, base+"api/entries?offset=100&limit=50", &page)
	assert.Equal(t, st.Rows, page.Total)
	require.Len(t, page.Rows, 50)
	assert.Equal(t, uint64(100), page.Rows[0].Seq)

	getJSON(t, base+"api/entries?kinds=belief", &page)
	assert.Equal(t, shape.eliminated+1, page.Total)
	getJSON(t, base+"api/entries?kinds=kernel,claims&q=ROLLED+BACK", &page)
	assert.Equal(t, shape.rolledBack, page.Total, "search is case-insensitive, within the kinds asked for")
	getJSON(t, base+"api/entries?offset=100000", &page)
	assert.Empty(t, page.Rows)

	var entry map[string]any
	getJSON(t, base+"api/entry?seq=9", &entry)
	assert.Equal(t, "kernel.start", entry["kind"])
	assert.Equal(t, entry["hash"], entry["computed_hash"])
	assert.True(t, json.Valid([]byte(entry["payload"].(string))))

	var budget []budgetSeries
	getJSON(t, base+"api/budget", &budget)
	require.Len(t, budget, 1)
	last := budget[0].Points[len(budget[0].Points)-1]
	assert.InDelta(t, last[1]-last[2], last[3], 1e-9, "net is gross minus refunded")
	var beliefs []beliefSeries
	getJSON(t, base+"api/belief", &beliefs)
	require.Len(t, beliefs, 1)
	assert.Equal(t, 50, beliefs[0].Declared)
	assert.Equal(t, float64(50-shape.eliminated), beliefs[0].Points[len(beliefs[0].Points)-1][1])
	var cl struct {
		Total int        `json:"total"`
		Rows  []claimRow `json:"rows"`
	}
	getJSON(t, base+"api/claims", &cl)
	require.Equal(t, 3, cl.Total)
	assert.Equal(t, "PUBLISH", cl.Rows[2].Decision)
	assert.Equal(t, "sre-lead", cl.Rows[2].Approvals[0].Approver)

	// A request naming another host (DNS rebinding) is refused.
	req, err := http.NewRequest("GET", base+"api/status", nil)
	require.NoError(t, err)
	req.Host = "attacker.example:80"
	r2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r2.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, r2.StatusCode)

	// The page and its files are served with the policy.
	for _, p := range []string{"", "app.js", "app.css"} {
		resp, err := http.Get(base + p)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, p)
		assert.Equal(t, contentSecurityPolicy, resp.Header.Get("Content-Security-Policy"))
		page := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "") // the SVG namespace names no resource
		assert.NotRegexp(t, `(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`, page, "no external host in %s", p)
	}
}

func TestViewKeptHead(t *testing.T) {
	path, _ := fileLog(t, 40)
	head := strings.TrimSpace(verity(t, "head", path).stdout)
	h, err := ParseHead(head)
	require.NoError(t, err)
	for _, c := range []struct {
		kept string
		ok   bool
	}{{head, true}, {fmt.Sprintf("%d:%s", h.Size, h.Hash), false}} {
		base, _ := startView(t, path, "--head", c.kept)
		var st status
		getJSON(t, base+"api/status", &st)
		require.NotNil(t, st.KeptOK)
		assert.Equal(t, c.ok, *st.KeptOK, c.kept)
		assert.Equal(t, c.ok, st.OK)
		assert.Equal(t, c.kept, st.Kept)
		if !c.ok {
			assert.Equal(t, "does not extend the kept head", st.Problem)
			assert.Contains(t, st.KeptError, "does not extend the trusted head")
		}
	}
}

func TestViewRefusedFile(t *testing.T) {
	path, _ := fileLog(t, 40)
	rec5, err := recordOffset(path, 5)
	require.NoError(t, err)
	bad := tampered(t, path, func(b []byte) []byte { b[rec5+60] ^= 1; return b })
	base, _ := startView(t, bad, "--head", "3:"+strings.Repeat("0", 64))
	var st status
	getJSON(t, base+"api/status", &st)
	assert.Equal(t, "corrupt", st.Problem)
	require.NotNil(t, st.BadSeq)
	assert.Equal(t, uint64(5), *st.BadSeq)
	var page entriesPage
	getJSON(t, base+"api/entries", &page)
	require.Len(t, page.Rows, 6, "the five verified entries, then the corrupt one")
	assert.Equal(t, "bad", page.Rows[5].State)
	assert.Contains(t, page.Rows[5].Summary, "corrupt record at entry 5")
	var entry map[string]any
	getJSON(t, base+"api/entry?seq=5", &entry)
	assert.Contains(t, entry["error"], "corrupt record")
	getJSON(t, base+"api/entry?seq=4", &entry)
	assert.Equal(t, entry["hash"], entry["computed_hash"])
}

// chromium returns the browser's path; the test is skipped without one,
// except in CI, where the browser test must run.
func chromium(t *testing.T) string {
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (.ci/run installs Debian's chromium)")
		}
		t.Skip("chromium is not installed; apt-get install chromium to run the browser test")
	}
	return p
}

// browse runs headless chromium on u with the given mode flag
// (--dump-dom, --screenshot=PATH) and returns its stdout. Every host but
// 127.0.0.1 resolves to nothing, so the page cannot reach another one.
func browse(t *testing.T, bin, u string, mode ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir(), "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		"--window-size=1400,1800", "--virtual-time-budget=15000"}, mode...)
	cmd := exec.CommandContext(ctx, bin, append(args, u)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("chromium: %v\n%s", err, stderr)
	}
	return string(out)
}

func count(s, sub string) int { return strings.Count(s, sub) }

func TestViewInChromium(t *testing.T) {
	bin := chromium(t)
	path, _ := fileLog(t, 400)
	base, reqs := startView(t, path)

	start := time.Now()
	dom := browse(t, bin, base, "--dump-dom")
	t.Logf("chromium started, loaded the page and dumped its DOM in %s; the page says %s", time.Since(start),
		regexp.MustCompile(`data-load-ms="\d+"`).FindString(dom))
	require.Contains(t, dom, `data-ready="true"`, "the page's script finished loading its data")
	assert.Contains(t, dom, `data-status="ok"`)
	assert.Equal(t, 1, count(dom, `class="budget-chart"`), "one budget chart per kernel session")
	for _, s := range []string{"gross", "refunded", "net", "limit"} {
		assert.Equal(t, 1, count(dom, `class="series series-`+s+`"`), s)
	}
	assert.Regexp(t, `class="series series-net" points="[0-9.]+,[0-9.]+( [0-9.]+,[0-9.]+){10,}"`, dom)
	assert.Equal(t, 1, count(dom, `class="belief-chart"`))
	assert.Equal(t, 1, count(dom, `class="series series-survivors"`))
	assert.Equal(t, 100, count(dom, `<tr class="row `), "one page of the timeline")
	assert.Equal(t, 3, count(dom, `<tr class="claim"`))
	assert.Contains(t, dom, "sre-lead APPROVED")

	// What the page loaded: its own origin only.
	m := regexp.MustCompile(`(?s)<pre id="resources">(.*?)</pre>`).FindStringSubmatch(dom)
	require.NotNil(t, m)
	loaded := strings.Fields(m[1])
	require.NotEmpty(t, loaded)
	for _, u := range loaded {
		assert.True(t, strings.HasPrefix(u, base), "the page loaded %s", u)
	}
	for _, want := range []string{base + "app.js", base + "app.css", base + "api/status", base + "api/budget"} {
		assert.Contains(t, m[1], want)
	}
	checkRequests(t, base, reqs)

	// A link to an entry opens its canonical payload and hash.
	var entry map[string]any
	getJSON(t, base+"api/entry?seq=9", &entry)
	dom = browse(t, bin, base+"#entry=9", "--dump-dom")
	require.Contains(t, dom, `data-ready="true"`)
	assert.Regexp(t, `<aside id="detail" class="card wide">`, dom, "the detail pane is shown")
	assert.Contains(t, dom, entry["hash"].(string)+"  ✓", "the hash, recomputed by the server")
	assert.Contains(t, dom, `"session": "oncall-7"`, "the payload, indented without being parsed")
	assert.Regexp(t, `<tr class="row  selected" data-seq="9"|<tr class="row selected" data-seq="9"`, dom)

	shot := filepath.Join(t.TempDir(), "view.png")
	browse(t, bin, base, "--screenshot="+shot)
	checkNotBlank(t, shot)
	if dir := os.Getenv("VERITY_VIEW_SCREENSHOT_DIR"); dir != "" {
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "view.png"), b, 0o644))
	}
}

// checkRequests checks that every request the server saw named it and
// asked for the page, its files or its endpoints.
func checkRequests(t *testing.T, base string, reqs *requests) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	reqs.mu.Lock()
	defer reqs.mu.Unlock()
	require.NotEmpty(t, reqs.seen)
	known := map[string]bool{"/": true, "/app.js": true, "/app.css": true, "/favicon.ico": true, "/api/status": true,
		"/api/budget": true, "/api/belief": true, "/api/entries": true, "/api/claims": true, "/api/entry": true, "/api/calls": true}
	for i, r := range reqs.seen {
		assert.Equal(t, u.Host, reqs.host[i])
		assert.True(t, known[r.Path], "unexpected request %s", r)
	}
}

// checkNotBlank decodes the PNG at path and checks that its pixels vary:
// a page that rendered, not a blank or single-colour image.
func checkNotBlank(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	require.Greater(t, b.Dx(), 500)
	var n, sum, sumSq float64
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			l := (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
			n++
			sum += l
			sumSq += l * l
			colours[r>>11<<10|g>>11<<5|bl>>11] = true
		}
	}
	mean := sum / n
	variance := sumSq/n - mean*mean
	t.Logf("screenshot %dx%d: luminance mean %.1f variance %.1f, %d colours", b.Dx(), b.Dy(), mean, variance, len(colours))
	assert.Greater(t, variance, 100.0, "the screenshot is not blank")
	assert.Greater(t, len(colours), 20, "the screenshot has more than a few colours")
}
