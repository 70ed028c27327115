package main

// The inbox page in a real browser, driven through its own script:
// Debian's chromium, headless, is controlled over the DevTools protocol
// on a pipe (--remote-debugging-pipe: NUL-terminated JSON messages on
// file descriptors 3 and 4). The test pastes tokens, types reasons and
// clicks the page's buttons; what it checks is what the page's script
// built and what the gate recorded, not the HTML the server sent.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

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

// browser is a headless chromium and one page of it.
type browser struct {
	t       *testing.T
	w       *os.File
	mu      sync.Mutex
	next    int
	waiting map[int]chan cdpMessage
	session string
}

type cdpMessage struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser runs chromium until the test ends, with one page open.
// Every host but 127.0.0.1 resolves to nothing.
func startBrowser(t *testing.T) *browser {
	bin := chromium(t)
	toBrowser, ours, err := os.Pipe()
	require.NoError(t, err)
	theirs, fromBrowser, err := os.Pipe()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir="+t.TempDir(), "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fds 3 and 4
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	_ = toBrowser.Close()
	_ = fromBrowser.Close()
	b := &browser{t: t, w: ours, waiting: map[int]chan cdpMessage{}}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r := bufio.NewReader(theirs)
		for {
			line, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMessage
			if json.Unmarshal(line[:len(line)-1], &m) != nil || m.ID == 0 {
				continue // an event
			}
			b.mu.Lock()
			ch := b.waiting[m.ID]
			delete(b.waiting, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() {
		_, _ = b.sendTo("", "Browser.close", nil)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cancel()
			<-done
		}
		cancel()
		_ = ours.Close()
		_ = theirs.Close()
		<-readDone
	})

	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	return b
}

// sendTo sends one command and waits for its answer.
func (b *browser) sendTo(session, method string, params any) (cdpMessage, error) {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan cdpMessage, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return cdpMessage{}, err
	}
	if _, err := b.w.Write(append(data, 0)); err != nil {
		return cdpMessage{}, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return m, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m, nil
	case <-time.After(2 * time.Minute):
		return cdpMessage{}, fmt.Errorf("%s: no answer from the browser", method)
	}
}

func (b *browser) call(session, method string, params, result any) {
	b.t.Helper()
	m, err := b.sendTo(session, method, params)
	require.NoError(b.t, err)
	if result != nil {
		require.NoError(b.t, json.Unmarshal(m.Result, result))
	}
}

// eval evaluates a JavaScript expression in the page (awaiting a
// promise) and decodes its value into v.
func (b *browser) eval(expr string, v any) {
	b.t.Helper()
	var out struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &out)
	if out.ExceptionDetails != nil {
		b.t.Fatalf("%s: %s %s", expr, out.ExceptionDetails.Text, out.ExceptionDetails.Exception.Description)
	}
	if v != nil {
		require.NoError(b.t, json.Unmarshal(out.Result.Value, v), "%s = %s", expr, out.Result.Value)
	}
}

// until waits for a JavaScript condition to hold.
func (b *browser) until(cond string) {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var ok bool
		b.eval("!!("+cond+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			b.eval("document.body.outerHTML", &body)
			b.t.Fatalf("waited a minute for %s; the page:\n%s", cond, body)
		}
		time.Sleep(20 * time.Millisecond) // polling the page, not synchronising with it
	}
}

func (b *browser) open(url string) {
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
	b.until(`document.readyState === "complete" && document.body && document.body.dataset.ready === "true"`)
}

// useToken pastes a token into the page's form and uses it, as a person
// would, and waits for the page to list as that principal.
func (b *browser) useToken(token, you string) {
	b.eval(fmt.Sprintf(`document.getElementById("token").value = %q; document.getElementById("use-token").click(); true`, token), nil)
	b.until(fmt.Sprintf(`document.body.dataset.you === %q`, you))
}

// answer types a reason on the request's card, clicks its button and
// waits for the page to have sent it; it returns the HTTP status.
func (b *browser) answer(id, button, reason string) string {
	var before string
	b.eval(`document.body.dataset.answers`, &before)
	card := fmt.Sprintf(`[...document.querySelectorAll("article.request")].find(a => a.dataset.id === %q)`, id)
	b.eval(fmt.Sprintf(`(() => { const c = %s; c.querySelector("input.reason").value = %q; c.querySelector("button.%s").click(); return true })()`,
		card, reason, button), nil)
	b.until(fmt.Sprintf(`document.body.dataset.answers !== %q`, before))
	var status string
	b.eval(`document.body.dataset.lastStatus`, &status)
	return status
}

// pageCard is what the page shows of a request.
type pageCard struct {
	ID, Tool, Tier, Caller, Arguments, Question, Approved, Awaiting, Second, Count string
	Images, Scripts                                                                int
}

func (b *browser) cards() map[string]pageCard {
	var cards []pageCard
	b.eval(`[...document.querySelectorAll("article.request")].map(a => ({
		ID: a.dataset.id, Tool: a.querySelector(".tool").textContent, Tier: a.querySelector(".tier").textContent,
		Caller: a.querySelector("dd.caller").textContent, Arguments: a.querySelector("pre.arguments").textContent,
		Question: a.querySelector("p.question").textContent, Approved: a.querySelector("dd.approved").textContent,
		Awaiting: a.querySelector("dd.awaiting").textContent, Count: a.querySelector("dd.count").textContent,
		Second: (a.querySelector("p.second") || {textContent: ""}).textContent,
		Images: a.querySelectorAll("img").length, Scripts: a.querySelectorAll("script").length}))`, &cards)
	out := map[string]pageCard{}
	for _, c := range cards {
		out[c.Tool+" "+c.Arguments] = c
	}
	return out
}

func TestInboxInChromium(t *testing.T) {
	b := startBrowser(t)
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := writeInboxPolicy(t, `"group:ops"`, "10m")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-jwks", is.JWKSURL,
		"-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)
	olga, sam := issuerToken(t, is, "olga", "ops"), issuerToken(t, is, "sam", "security")
	olgaKey, samKey := is.URL+"|olga", is.URL+"|sam"

	cs := connectWithToken(t, p, issuerToken(t, is, "agent"))
	hostile := `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>"></pre><b>`
	deleted := callAsync(cs, "delete_file", map[string]any{"path": "a.txt"})
	denied := callAsync(cs, "delete_file", map[string]any{"path": hostile})
	written := callAsync(cs, "write_file", map[string]any{"path": "admin.txt", "content": "</script><svg onload=window.pwned=3>"})
	listed := waitListed(t, base, olga, 3)
	shown := map[string]inboxRequest{}
	for _, r := range listed {
		shown[r.Tool+" "+r.Arguments] = r
	}

	// Without a token the page asks for one and lists nothing.
	b.open(base)
	var auth string
	b.eval(`document.body.dataset.auth`, &auth)
	assert.Equal(t, "needed", auth)
	var loginHidden bool
	b.eval(`document.getElementById("login").hidden`, &loginHidden)
	assert.False(t, loginHidden)

	b.useToken(olga, olgaKey)
	b.until(`document.body.dataset.count === "3"`)
	cards := b.cards()
	require.Len(t, cards, 3)
	for k, r := range shown {
		c, ok := cards[k]
		require.True(t, ok, "the page shows %s", k)
		assert.Equal(t, r.ID, c.ID)
		assert.Equal(t, r.Arguments, c.Arguments, "the arguments in full, as the gate shows them")
		assert.Equal(t, r.Question, c.Question)
		assert.Equal(t, is.URL+"|agent", c.Caller)
		assert.Zero(t, c.Images+c.Scripts, "nothing of the arguments became an element")
	}
	var evil, priv, plain pageCard
	for _, c := range cards {
		switch {
		case c.Tool == "write_file":
			priv = c
		case strings.Contains(c.Arguments, "onerror"):
			evil = c
		case c.Arguments == `{"path":"a.txt"}`:
			plain = c
		}
	}
	require.NotEmpty(t, evil.ID)
	require.NotEmpty(t, priv.ID)
	assert.Equal(t, "PRIVILEGE", priv.Tier)
	assert.Equal(t, "nobody yet", priv.Approved)
	assert.Equal(t, "Needs 2 approvals, each by a different person.", priv.Second)
	assert.Equal(t, "0 of 2 approvals", priv.Count)
	assert.Equal(t, "0 of 1 approval", plain.Count)
	require.NotEmpty(t, plain.ID)

	// Approve, and deny with a reason.
	assert.Equal(t, "200", b.answer(plain.ID, "approve", "routine cleanup"))
	assert.NotContains(t, receive(t, deleted), "refused")
	assert.Equal(t, "200", b.answer(evil.ID, "deny", "not <b>this</b> one"))
	assert.Equal(t, `refused: tool "delete_file" (rule #2, approval): DELETE denied by group:ops: by `+olgaKey+`: not <b>this</b> one`, receive(t, denied))

	// PRIVILEGE: olga approves once; the page says it needs a second
	// approver; olga again is refused; sam's approval lets it run.
	assert.Equal(t, "200", b.answer(priv.ID, "approve", ""))
	b.until(`document.body.dataset.count === "1"`)
	var status string
	b.eval(`document.getElementById("status").textContent`, &status)
	assert.Equal(t, "Approved; still awaiting group:security.", status)
	c := b.cards()
	require.Len(t, c, 1)
	for _, pc := range c {
		assert.Equal(t, "group:ops", pc.Approved)
		assert.Equal(t, "group:security", pc.Awaiting)
		assert.Equal(t, "Approved 1 of 2: it needs 1 more approval, by another person (group:security).", pc.Second)
		assert.Equal(t, "1 of 2 approvals", pc.Count)
	}
	assert.Equal(t, "403", b.answer(priv.ID, "approve", "me again"), "one person is one approver")
	// A reason that would hide text is refused before anything else, and
	// the page says which member and why.
	assert.Equal(t, "400", b.answer(priv.ID, "approve", "fine\u202eenif"))
	b.eval(`document.getElementById("status").textContent`, &status)
	assert.Equal(t, "Refused (HTTP 400): invalid answer: 1 violation: /reason: character: a control, format, line or paragraph separator character", status)
	select {
	case s := <-written:
		t.Fatalf("the PRIVILEGE call returned on one approval: %s", s)
	default:
	}
	b.useToken(sam, samKey)
	assert.Equal(t, "200", b.answer(priv.ID, "approve", "second pair of eyes"))
	assert.NotContains(t, receive(t, written), "refused")
	b.until(`document.body.dataset.count === "0"`)
	var empty bool
	b.eval(`!document.getElementById("empty").hidden`, &empty)
	assert.True(t, empty)

	var pwned any
	b.eval(`window.pwned === undefined ? null : window.pwned`, &pwned)
	assert.Nil(t, pwned, "no argument's script ran")
	assert.Equal(t, 1, up.ran(t, "delete_file"))
	assert.Equal(t, 1, up.ran(t, "write_file"))

	stopHTTPProxy(t, p)
	var approvers []string
	for _, e := range logEntries(t, logPath, claims.KindApprove) {
		a := e["approval"].(map[string]any)
		approvers = append(approvers, fmt.Sprintf("%s %s %s", a["approver"], a["decision"], a["reason"]))
	}
	assert.Equal(t, []string{
		"group:ops APPROVED by " + olgaKey + ": routine cleanup",
		"group:ops REJECTED by " + olgaKey + ": not <b>this</b> one",
		"group:ops APPROVED by " + olgaKey,
		"group:security APPROVED by " + samKey + ": second pair of eyes",
	}, approvers)
}
