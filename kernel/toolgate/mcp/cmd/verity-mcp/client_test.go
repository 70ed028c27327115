package main

// verity-mcp client's guarantees and the tests that check them. The
// client runs in-process (runClient) in front of real servers: the
// test server process (internal/testserver) directly, the same through
// the verity-mcp binary, and an SDK server over streamable HTTP.
//
//   - It lists and calls, and a tool's error exits 1:
//     TestClientDirect.
//   - Through the proxy: a call runs; a refused call exits 1 and never
//     reaches the server; an approval asked by elicitation is answered
//     from stdin (y: runs once; n: never) or by -yes/-no; the budget runs
//     out; the log verifies and replays: TestClientThroughTheProxy.
//   - The binary's first argument "client" runs it:
//     TestClientDispatchFromTheBinary.
//   - -url with -token-file: the token is sent, a wrong one fails with
//     exit 2, and a question over HTTP is answered: TestClientOverHTTP.
//   - Usage errors exit 2 and name the problem: TestClientUsage;
//     FuzzClientArgs; FuzzTerminalAnswer (any stdin, any form: a valid
//     answer or none, never a panic).
//   - Results print readably: TestPrintResult;
//     TestPrintResultShowsEveryText (rapid).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
)

// clientRun runs verity-mcp client with args and stdin; it returns the
// exit status, stdout and stderr.
func clientRun(t testing.TB, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := runClient(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestClientDirect(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "notes.txt", "buy milk")
	server := append([]string{"--"}, up.argv()...)

	code, out, stderr := clientRun(t, "", append([]string{"list"}, server...)...)
	require.Equal(t, clientOK, code, stderr)
	assert.Equal(t, `delete_file  Delete a file of the sandbox.
echo         Return the text given.
read_file    Read a file of the sandbox.
search       List the files that contain a text.
write_file   Write a file of the sandbox.
`, out)

	code, out, stderr = clientRun(t, "", append([]string{"call", "read_file", `{"path":"notes.txt"}`}, server...)...)
	require.Equal(t, clientOK, code, stderr)
	assert.Equal(t, "buy milk\n", out)

	// Flags after the operands, and no arguments: {}.
	code, out, _ = clientRun(t, "", append([]string{"call", "echo", "-timeout", "1m"}, server...)...)
	assert.Equal(t, clientToolError, code)
	assert.Contains(t, out, `missing properties: ["text"]`, "the arguments sent are {}")

	code, out, stderr = clientRun(t, "", append([]string{"call", "read_file", `{"path":"missing.txt"}`}, server...)...)
	assert.Equal(t, clientToolError, code, "a tool's error exits 1")
	assert.Contains(t, out, "missing.txt")
	assert.Contains(t, stderr, "isError")

	code, out, _ = clientRun(t, "", append([]string{"call", "no_such_tool"}, server...)...)
	assert.Equal(t, clientToolError, code, "the server answers an unknown tool with an error: exit 1")
	assert.Contains(t, out, "error:")

	code, _, stderr = clientRun(t, "", "list", "--", filepath.Join(t.TempDir(), "no-such-server"))
	assert.Equal(t, clientUsage, code, "a server that does not start exits 2")
	assert.Contains(t, stderr, "connecting to")

	// A process that is no MCP server: exit 2, its stderr shown.
	code, _, stderr = clientRun(t, "", "list", "--", "sh", "-c", "echo this is no server >&2; exit 3")
	assert.Equal(t, clientUsage, code)
	assert.Contains(t, stderr, "this is no server")
}

// clientPolicy is the policy of the proxy the client talks to: reads
// cheap, deletes need a human, a budget of 2; echo is not in the
// catalogue.
const clientPolicy = `{
  "version": 2,
  "budget": "2",
  "min_cost": "0.01",
  "unknown_tools": "refuse",
  "tools": [
    {"match": "read_file", "cost": "0.5"},
    {"match": "write_file", "cost": "0.5", "tier": "MODIFY",
     "arguments": {"properties": {"path": {"pattern": "\\.txt$"}}}},
    {"match": "delete_file", "cost": "0.5", "tier": "DELETE"}
  ]
}`

func TestClientThroughTheProxy(t *testing.T) {
	bin := proxyBinary(t)
	up := newUpstream(t)
	up.file(t, "notes.txt", "buy milk")
	up.file(t, "old.txt", "x")
	up.file(t, "older.txt", "y")
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(clientPolicy), 0o600))
	logPath := filepath.Join(dir, "proxy.trace")
	server := append([]string{"--", bin, "-policy", pol, "-log", logPath, "--"}, up.argv()...)
	call := func(stdin string, args ...string) (int, string, string) {
		return clientRun(t, stdin, append(args, server...)...)
	}

	code, out, stderr := call("", "list")
	require.Equal(t, clientOK, code, stderr)
	assert.Equal(t, "delete_file  Delete a file of the sandbox.\nread_file    Read a file of the sandbox.\nwrite_file   Write a file of the sandbox.\n", out,
		"the tools the policy never allows are not listed")

	code, out, stderr = call("", "call", "read_file", `{"path":"notes.txt"}`) // 0.5 spent
	require.Equal(t, clientOK, code, stderr)
	assert.Equal(t, "buy milk\n", out)

	code, out, _ = call("", "call", "echo", `{"text":"hi"}`)
	assert.Equal(t, clientToolError, code, "a refused call exits 1")
	assert.Contains(t, out, `tool "echo" is not in the gate's catalogue`)
	assert.Zero(t, up.ran(t, "echo"), "a refused call never reaches the server")

	code, out, _ = call("", "call", "write_file", `{"path":"run.sh","content":"rm -rf /"}`)
	assert.Equal(t, clientToolError, code, "a call no rule's argument condition admits is refused")
	assert.Contains(t, out, "no rule admits the call: rule #1 (arguments: /path: does not match pattern")
	assert.Zero(t, up.ran(t, "write_file"))

	// Asked on the terminal: n declines, the file stays.
	code, out, _ = call("n\n", "call", "delete_file", `{"path":"old.txt"}`)
	assert.Equal(t, clientToolError, code)
	assert.Contains(t, out, "? Allow the DELETE tool call \"delete_file\" with arguments {\"path\":\"old.txt\"}?\n  approve? [y/n, then a reason if you like] n\n")
	assert.Contains(t, out, "denied by human")
	assert.True(t, up.exists("old.txt"))
	assert.Zero(t, up.ran(t, "delete_file"), "a declined call never runs")

	// Anything but y or n is asked again; then y with a reason runs it once.
	code, out, stderr = call("maybe\ny not needed any more\n", "call", "delete_file", `{"path":"old.txt"}`) // 1 spent
	require.Equal(t, clientOK, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "answer y or n\n")
	assert.Contains(t, out, "deleted old.txt\n")
	assert.False(t, up.exists("old.txt"))
	assert.Equal(t, 1, up.ran(t, "delete_file"))

	// No answer at all (stdin ends): cancelled, never run.
	code, out, _ = call("", "call", "delete_file", `{"path":"older.txt"}`)
	assert.Equal(t, clientToolError, code)
	assert.Contains(t, out, "cancelled: stdin ended before an answer")
	assert.True(t, up.exists("older.txt"))

	// -no and -yes answer without stdin.
	code, out, _ = call("y\n", "-no", "call", "delete_file", `{"path":"older.txt"}`)
	assert.Equal(t, clientToolError, code)
	assert.Contains(t, out, "answered no (-no)")
	assert.True(t, up.exists("older.txt"))
	code, out, stderr = call("", "-yes", "-reason", "cleanup", "call", "delete_file", `{"path":"older.txt"}`) // 1.5 spent
	require.Equal(t, clientOK, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "answered yes (-yes): cleanup\n")
	assert.False(t, up.exists("older.txt"))

	code, out, stderr = call("", "call", "read_file", `{"path":"notes.txt"}`) // 2 spent
	require.Equal(t, clientOK, code, "%s\n%s", out, stderr)
	code, out, _ = call("", "call", "read_file", `{"path":"notes.txt"}`)
	assert.Equal(t, clientToolError, code, "the budget is spent: refused")
	assert.Contains(t, out, "budget")
	assert.Equal(t, 2, up.ran(t, "read_file"))

	// The log verifies; its approvals are on it; the spend replays.
	headOut, headErr := &bytes.Buffer{}, &bytes.Buffer{}
	cmd := exec.Command(bin, "-policy", pol, "-log", logPath, "--", "sh", "-c", "exit 0")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), headOut, headErr
	_ = cmd.Run() // prints the head on exit
	checkLog(t, headErr.String(), logPath, pol, "stdio", 2*kernel.Unit)
}

func TestClientDispatchFromTheBinary(t *testing.T) {
	bin := proxyBinary(t)
	up := newUpstream(t)
	out, err := exec.Command(bin, append([]string{"client", "call", "echo", `{"text":"through the binary"}`, "--"}, up.argv()...)...).Output()
	require.NoError(t, err)
	assert.Equal(t, "through the binary\n", string(out))
	cmd := exec.Command(bin, "client", "list")
	require.Error(t, cmd.Run())
	assert.Equal(t, clientUsage, cmd.ProcessState.ExitCode(), "a usage error exits 2")
}

// httpServer serves an SDK server over streamable HTTP that wants the
// bearer token "sekrit": a tool "remove" that asks the human first, and
// "stats" with structured output.
func httpServer(t *testing.T) string {
	srv := sdk.NewServer(&sdk.Implementation{Name: "http-test", Version: "v1"}, nil)
	type removeArgs struct {
		Path string `json:"path"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "remove", Description: "Remove a path, once a human agrees."},
		func(ctx context.Context, req *sdk.CallToolRequest, in removeArgs) (*sdk.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Remove " + in.Path + "?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"reason": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			if res.Action != "accept" {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "not removed: " + res.Action}}}, nil, nil
			}
			reason, _ := res.Content["reason"].(string)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "removed " + in.Path + " (" + reason + ")"}}}, nil, nil
		})
	type stats struct {
		Files int `json:"files"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "stats", Description: "Count files."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, stats, error) {
			return nil, stats{Files: 3}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sekrit" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestClientOverHTTP(t *testing.T) {
	url := httpServer(t)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(good, []byte("sekrit\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("wrong"), 0o600))

	code, out, stderr := clientRun(t, "", "-url", url, "-token-file", good, "list")
	require.Equal(t, clientOK, code, stderr)
	assert.Equal(t, "remove  Remove a path, once a human agrees.\nstats   Count files.\n", out)

	code, out, stderr = clientRun(t, "", "-url", url, "-token-file", good, "call", "stats")
	require.Equal(t, clientOK, code, stderr)
	assert.Equal(t, "{\n  \"files\": 3\n}\n", out, "structured content as JSON, once")

	code, out, stderr = clientRun(t, "y tidy\n", "-url", url, "-token-file", good, "call", "remove", `{"path":"/tmp/a"}`)
	require.Equal(t, clientOK, code, stderr)
	assert.Equal(t, "? Remove /tmp/a?\n  approve? [y/n, then a reason if you like] y tidy\nremoved /tmp/a (tidy)\n", out)

	code, out, _ = clientRun(t, "", "-no", "-url", url, "-token-file", good, "call", "remove", `{"path":"/tmp/a"}`)
	assert.Equal(t, clientToolError, code)
	assert.Contains(t, out, "not removed: decline")

	code, _, stderr = clientRun(t, "", "-url", url, "-token-file", bad, "list")
	assert.Equal(t, clientUsage, code, "a refused token: exit 2")
	assert.Contains(t, stderr, "connecting to "+url)
	code, _, _ = clientRun(t, "", "-url", url, "list")
	assert.Equal(t, clientUsage, code, "no token: exit 2")
}

func TestClientUsage(t *testing.T) {
	dir := t.TempDir()
	empty, spaced := filepath.Join(dir, "empty"), filepath.Join(dir, "spaced")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))
	require.NoError(t, os.WriteFile(spaced, []byte("two tokens"), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no operation"},
		{[]string{"--", "srv"}, "no operation"},
		{[]string{"frobnicate", "--", "srv"}, `unknown operation "frobnicate"`},
		{[]string{"list", "extra", "--", "srv"}, "list takes no operand"},
		{[]string{"call", "--", "srv"}, "call needs the tool's name"},
		{[]string{"call", "", "--", "srv"}, "the tool's name is empty"},
		{[]string{"call", "t", "{", "--", "srv"}, "not one JSON object"},
		{[]string{"call", "t", "[1]", "--", "srv"}, "not one JSON object"},
		{[]string{"call", "t", "null", "--", "srv"}, "null"},
		{[]string{"call", "t", `{"a":1,"a":2}`, "--", "srv"}, "duplicate"},
		{[]string{"call", "t", "{}", "x", "--", "srv"}, "one JSON object of arguments"},
		{[]string{"list"}, "no server"},
		{[]string{"-url", "http://127.0.0.1:1/mcp", "list", "--", "srv"}, "not both"},
		{[]string{"-url", "ftp://host/mcp", "list"}, "http:// or https://"},
		{[]string{"-url", "http://example.com/mcp", "-token-file", empty, "list"}, "loopback host only"},
		{[]string{"-token-file", empty, "list", "--", "srv"}, "-token-file goes with -url"},
		{[]string{"-yes", "-no", "list", "--", "srv"}, "exclude each other"},
		{[]string{"-reason", "r", "list", "--", "srv"}, "-reason goes with -yes"},
		{[]string{"-timeout", "-1s", "list", "--", "srv"}, "negative"},
		{[]string{"-bogus", "list", "--", "srv"}, "flag provided but not defined"},
		{[]string{"-url", "http://127.0.0.1:1/mcp", "-token-file", empty, "list"}, "is empty"},
		{[]string{"-url", "http://127.0.0.1:1/mcp", "-token-file", spaced, "list"}, "a space"},
		{[]string{"-url", "http://127.0.0.1:1/mcp", "-token-file", dir, "list"}, "-token-file"},
	} {
		code, _, stderr := clientRun(t, "", c.args...)
		assert.Equal(t, clientUsage, code, "%q", c.args)
		assert.Contains(t, stderr, c.want, "%q", c.args)
	}
	code, _, stderr := clientRun(t, "", "-h")
	assert.Equal(t, clientOK, code)
	assert.Contains(t, stderr, "exit status: 0 ok; 1")
}

func TestPrintResult(t *testing.T) {
	size := int64(7)
	res := &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: "line one\nline two"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte("abc")},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("abcd")},
			&sdk.ResourceLink{URI: "file:///x", Name: "x", Size: &size},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///y", Text: "why\n"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///z", Blob: []byte("zz")}},
			&sdk.TextContent{Text: `{"n": 1}`}, // the structured content's own text: printed once
		},
		StructuredContent: map[string]any{"n": 1},
	}
	var b bytes.Buffer
	require.NoError(t, printResult(&b, res))
	assert.Equal(t, `line one
line two
[image image/png, 3 bytes]
[audio audio/wav, 4 bytes]
[resource link file:///x x]
[resource file:///y]
why
[resource file:///z, 2 bytes]
{
  "n": 1
}
`, b.String())

	var list bytes.Buffer
	printTools(&list, []*sdk.Tool{{Name: "a", Description: "first\nsecond"}, {Name: "bb\x1b[31m", Title: "T"}, {Name: "c"}})
	assert.Equal(t, "a        first\nbb [31m  T\nc\n", list.String(), "one line a tool, control characters blanked")
}

// TestPrintResultShowsEveryText: every text content is printed whole, in
// order, whatever else the result holds.
func TestPrintResultShowsEveryText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		texts := rapid.SliceOfN(rapid.String(), 0, 5).Draw(t, "texts")
		res := &sdk.CallToolResult{}
		for _, s := range texts {
			res.Content = append(res.Content, &sdk.TextContent{Text: s})
		}
		if rapid.Bool().Draw(t, "structured") {
			res.StructuredContent = map[string]any{"k": rapid.String().Draw(t, "v")}
		}
		var b bytes.Buffer
		if err := printResult(&b, res); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, s := range texts {
			if res.StructuredContent != nil {
				want, _ := json.Marshal(res.StructuredContent)
				if sameJSON(s, want) {
					continue // printed as the structured content
				}
			}
			i := strings.Index(out, s)
			if i < 0 {
				t.Fatalf("text %q missing from\n%s", s, out)
			}
			out = out[i+len(s):]
		}
	})
}

// FuzzClientArgs: any command line is parsed or refused with an error,
// never a panic; arguments accepted are one JSON object.
func FuzzClientArgs(f *testing.F) {
	f.Add("call", "t", `{"a":1}`, "-yes")
	f.Add("list", "", "", "-url=http://127.0.0.1:9/mcp")
	f.Add("call", "t", `{"a":"\ud800"}`, "")
	f.Add("call", "t", `{"a":1e400}`, "-reason=x")
	f.Fuzz(func(t *testing.T, op, tool, args, flag string) {
		argv := []string{}
		if flag != "" {
			argv = append(argv, flag)
		}
		argv = append(argv, op)
		if tool != "" {
			argv = append(argv, tool)
		}
		if args != "" {
			argv = append(argv, args)
		}
		c, err := parseClientArgs(append(argv, "--", "srv"), &bytes.Buffer{})
		if err != nil || c.op != "call" {
			return
		}
		var m map[string]any
		if jerr := json.Unmarshal(c.arguments, &m); jerr != nil || m == nil {
			t.Fatalf("accepted arguments %q are not a JSON object: %v", c.arguments, jerr)
		}
	})
}

// FuzzTerminalAnswer: whatever stdin holds and whatever flat form is
// asked, the terminal answers accept (with content of the form's fields
// only), decline or cancel, and never panics.
func FuzzTerminalAnswer(f *testing.F) {
	f.Add("y because\n", `{"type":"object","properties":{"reason":{"type":"string"}}}`)
	f.Add("y\n3\nyes\nred\n", `{"type":"object","properties":{"n":{"type":"integer"},"ok":{"type":"boolean"},"c":{"type":"string","enum":["red","blue"]}},"required":["n"]}`)
	f.Add("n\n", `{}`)
	f.Add("", `null`)
	f.Add("x\ny\n\n\n\n", `{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}`)
	f.Fuzz(func(t *testing.T, stdin, schema string) {
		var s any
		if json.Unmarshal([]byte(schema), &s) != nil {
			return
		}
		term := &terminal{in: bufio.NewReader(strings.NewReader(stdin)), out: &bytes.Buffer{}, echo: true}
		res, err := term.elicit(context.Background(), &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: "q?", RequestedSchema: s}})
		if err != nil {
			t.Fatal(err)
		}
		switch res.Action {
		case "accept":
			names := map[string]bool{}
			for _, fl := range formFields(s) {
				names[fl.name] = true
			}
			for k := range res.Content {
				if !names[k] {
					t.Fatalf("answered field %q the form does not have", k)
				}
			}
		case "decline", "cancel":
		default:
			t.Fatalf("action %q", res.Action)
		}
	})
}

// TestTerminalApprovesOnlyOnYes: the terminal accepts a question only
// when the first word the person typed is y or yes (after at most two
// lines that are neither, which are asked again); n, no, anything else
// three times, or the end of stdin never approve.
func TestTerminalApprovesOnlyOnYes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lines := rapid.SliceOfN(rapid.OneOf(
			rapid.SampledFrom([]string{"y", "yes", "Y", "n", "no", "", "maybe", "yes please", "n y", "ye", "yess"}),
			rapid.String(),
		), 0, 5).Draw(t, "lines")
		stdin := strings.Join(lines, "\n")
		if rapid.Bool().Draw(t, "final newline") {
			stdin += "\n"
		}
		term := &terminal{in: bufio.NewReader(strings.NewReader(stdin)), out: &bytes.Buffer{}}
		res, err := term.elicit(context.Background(), &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: "delete?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"reason": map[string]any{"type": "string"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		// The naive model: the first of the first three lines that reads y or n decides.
		want := "cancel"
		for i, l := range strings.Split(stdin, "\n") {
			if i == 3 || (i == len(strings.Split(stdin, "\n"))-1 && l == "" && strings.HasSuffix(stdin, "\n")) {
				break
			}
			word, _, _ := strings.Cut(strings.TrimSpace(l), " ")
			switch strings.ToLower(word) {
			case "y", "yes":
				want = "accept"
			case "n", "no":
				want = "decline"
			default:
				continue
			}
			break
		}
		if res.Action != want {
			t.Fatalf("stdin %q: action %q, want %q", stdin, res.Action, want)
		}
	})
}
