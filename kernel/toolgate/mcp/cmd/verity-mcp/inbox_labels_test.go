package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// TestInboxDeclassify: after a read of private data, a write is refused
// by the policy's flow; an approver clears the label at the inbox (a
// toolgate.declassify entry names who and why), and the write runs. A
// second clearing is 404, a malformed body 400 with its problems.
func TestInboxDeclassify(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "a.txt", "secret")
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01",
	  "labels": ["private_data"],
	  "tools": [{"match": "read_file", "cost": "0.1", "labels": ["private_data"]},
	            {"match": "write_file", "cost": "0.5", "flow": [{"after": ["private_data"], "effect": "refuse", "reason": "no writes after private reads"}]}]}`), 0o600))
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)

	require.False(t, p.call(t, "read_file", map[string]any{"path": "a.txt"}).IsError)
	res := p.call(t, "write_file", map[string]any{"path": "b.txt", "content": "x"})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "no writes after private reads")

	post := func(body string) (int, string) {
		req, err := http.NewRequest("POST", base+"api/declassify", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b := new(strings.Builder)
		_, _ = io.Copy(b, resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := post(`{"caller": "stdio", "label": "private data!", "reason": "", "x": 1}`)
	assert.Equal(t, http.StatusBadRequest, code)
	for _, want := range []string{"/label", "/reason", "/x"} {
		assert.Contains(t, body, want)
	}
	code, body = post(`{"caller": "stdio", "label": "private_data", "reason": "the file was public after all"}`)
	require.Equal(t, http.StatusOK, code, body)
	code, _ = post(`{"caller": "stdio", "label": "private_data", "reason": "again"}`)
	assert.Equal(t, http.StatusNotFound, code)

	res = p.call(t, "write_file", map[string]any{"path": "b.txt", "content": "x"})
	assert.False(t, res.IsError, text(res))
	require.Equal(t, 0, p.stop(t))
	entries := logEntries(t, logPath, gatelog.KindDeclassify)
	require.Len(t, entries, 1)
	assert.Equal(t, "human", entries[0]["approver"])
	assert.Equal(t, "the file was public after all", entries[0]["reason"])
}

// FuzzDecodeDeclassify: the decoder never panics; what it accepts has
// every member within its bounds.
func FuzzDecodeDeclassify(f *testing.F) {
	for _, s := range []string{
		`{"caller":"stdio","label":"private_data","reason":"ok"}`,
		`{"caller":"stdio","label":"private_data","reason":"\u202e"}`,
		`{"caller":"stdio","label":"x","label":"y","reason":"r"}`,
		`{"caller":"","label":"1x","reason":null}`,
		"{\"caller\":\"\xff\",\"label\":\"a\",\"reason\":\"r\"}",
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDeclassify(b)
		if err != nil {
			if !assert.ErrorIs(t, err, errDeclassify) {
				t.FailNow()
			}
			return
		}
		if d.Caller == "" || len(d.Caller) > maxDeclassifyCaller || d.Reason == "" || len(d.Reason) > maxDeclassifyReason ||
			!declassifyLabel.MatchString(d.Label) || strings.ContainsFunc(d.Caller+d.Reason, hiddenInReason) {
			t.Fatalf("accepted %q as %+v", b, d)
		}
	})
}

// TestInboxDeclassifyInChromium: the page's "Clear a label" form, in
// Chromium through its own script, clears the label (the page says so),
// and a second clearing is refused with the reason shown.
func TestInboxDeclassifyInChromium(t *testing.T) {
	b := startBrowser(t)
	up := newUpstream(t)
	up.file(t, "a.txt", "secret")
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01",
	  "labels": ["private_data"],
	  "tools": [{"match": "read_file", "cost": "0.1", "labels": ["private_data"]},
	            {"match": "write_file", "cost": "0.5", "flow": [{"after": ["private_data"], "effect": "refuse"}]}]}`), 0o600))
	p := startProxy(t, append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "trace.log"), "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)
	require.False(t, p.call(t, "read_file", map[string]any{"path": "a.txt"}).IsError)
	require.True(t, p.call(t, "write_file", map[string]any{"path": "b.txt", "content": "x"}).IsError)

	b.open(base)
	clear := func(reason string) (status, text string) {
		var before string
		b.eval(`document.body.dataset.answers`, &before)
		b.eval(fmt.Sprintf(`document.getElementById("dc-caller").value = "stdio"; document.getElementById("dc-label").value = "private_data";
			document.getElementById("dc-reason").value = %q; document.getElementById("dc-send").click(); true`, reason), nil)
		b.until(fmt.Sprintf(`document.body.dataset.answers !== %q`, before))
		b.eval(`document.body.dataset.lastStatus`, &status)
		b.eval(`document.getElementById("status").textContent`, &text)
		return status, text
	}
	status, text := clear("reviewed: the file is public")
	assert.Equal(t, "200", status)
	assert.Equal(t, "Cleared private_data from stdio.", text)
	status, text = clear("again")
	assert.Equal(t, "404", status)
	assert.Equal(t, "Refused (HTTP 404): the caller's session does not carry this label", text)
	assert.False(t, p.call(t, "write_file", map[string]any{"path": "b.txt", "content": "x"}).IsError)
}
