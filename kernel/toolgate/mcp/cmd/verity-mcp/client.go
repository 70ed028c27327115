package main

// verity-mcp client: a small MCP client for the terminal, to try a server
// (or verity-mcp in front of one) without a desktop assistant.
//
//	verity-mcp client [flags] list -- UPSTREAM…
//	verity-mcp client [flags] call TOOL ['{"json":"arguments"}'] -- UPSTREAM…
//	verity-mcp client [flags] -url http://HOST/PATH [-token-file FILE] list|call …
//
// It rides the MCP Go SDK's client (v1.8.0):
//
//	func NewClient(impl *Implementation, options *ClientOptions) *Client
//	ClientOptions.ElicitationHandler func(context.Context, *ElicitRequest) (*ElicitResult, error)
//	func (c *Client) Connect(ctx context.Context, t Transport, opts *ClientSessionOptions) (*ClientSession, error)
//	func (cs *ClientSession) Tools(ctx context.Context, params *ListToolsParams) iter.Seq2[*Tool, error]
//	func (cs *ClientSession) CallTool(ctx context.Context, params *CallToolParams) (*CallToolResult, error)
//	type CommandTransport struct{ Command *exec.Cmd; TerminateDuration time.Duration }
//	type StreamableClientTransport struct{ Endpoint string; HTTPClient *http.Client; … }
//
// Setting ElicitationHandler makes the client advertise form elicitation,
// so the proxy asks for an approval by elicitation (on protocol
// 2026-07-28 as an input-required result, which the SDK's client
// middleware answers with the same handler and retries); the handler asks
// on the terminal.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/internal/osfile"
	"github.com/verity-go/verity/internal/strictjson"
)

// Exit statuses of verity-mcp client.
const (
	clientOK        = 0 // the tools were listed, or the call succeeded
	clientToolError = 1 // the call's result is an error (isError: a refusal by the gate, a failed tool) or the server answered it with an error
	clientUsage     = 2 // a bad command line, or the server could not be reached or spoke no MCP
)

const clientUsageText = `usage: verity-mcp client [-yes|-no] [-reason TEXT] [-timeout D] [-v] list -- UPSTREAM [args...]
       verity-mcp client [flags] call TOOL ['{"json":"arguments"}'] -- UPSTREAM [args...]
       verity-mcp client [flags] -url http://HOST:PORT/PATH [-token-file FILE] list|call TOOL [ARGS]

A small MCP client for the terminal. It starts UPSTREAM (any MCP server
over stdio, or verity-mcp in front of one) or connects to -url
(streamable HTTP), then lists the tools or calls one. When the server
asks a question (MCP elicitation: verity-mcp asks this way for an
approval), the question is printed and the answer read from stdin
(y or n, optionally followed by a reason); -yes or -no answer every
question without reading stdin, for scripts.

Results: text content as text, structured content as indented JSON,
other content as one line naming it. Stdout carries the results and the
questions; stderr the client's errors (and UPSTREAM's stderr with -v,
or when the connection fails).

exit status: 0 ok; 1 the call's result is an error (a refusal by the gate,
a declined approval, a failed tool) or the server answered it with an
error; 2 a usage error, or the server could not be reached or failed.`

// maxTokenFile bounds -token-file.
const maxTokenFile = 64 << 10

// maxArguments bounds a call's arguments on the command line.
const maxArguments = 4 << 20

// stderrTail is how much of UPSTREAM's stderr is kept (without -v) to
// show when the connection fails.
const stderrTail = 8 << 10

// dispatch runs verity-mcp client when the first argument is "client",
// and the proxy otherwise.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "client" {
		return runClient(ctx, args[1:], stdin, stdout, stderr)
	}
	return run(ctx, args, stdin, stdout, stderr)
}

// clientConfig is verity-mcp client's parsed command line.
type clientConfig struct {
	yes, no   bool
	reason    string
	url       string
	tokenFile string
	timeout   time.Duration
	verbose   bool

	op        string          // "list" or "call"
	tool      string          // call's TOOL
	arguments json.RawMessage // call's arguments, a JSON object
	upstream  []string        // the command after --
}

// parseClientArgs reads verity-mcp client's command line. Flags may come
// before or after the operation and its operands; everything after the
// first "--" is the upstream command.
func parseClientArgs(args []string, stderr io.Writer) (clientConfig, error) {
	var c clientConfig
	before := args
	if i := slices.Index(args, "--"); i >= 0 {
		before, c.upstream = args[:i], args[i+1:]
	}
	fs := flag.NewFlagSet("verity-mcp client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, clientUsageText)
		fs.PrintDefaults()
	}
	fs.BoolVar(&c.yes, "yes", false, "approve every question without asking (for scripts)")
	fs.BoolVar(&c.no, "no", false, "decline every question without asking (for scripts)")
	fs.StringVar(&c.reason, "reason", "", "the reason given with -yes (recorded with the approval)")
	fs.StringVar(&c.url, "url", "", "connect to this streamable HTTP endpoint (http://… or https://…) instead of starting UPSTREAM")
	fs.StringVar(&c.tokenFile, "token-file", "", "with -url: send the bearer token this file holds")
	fs.DurationVar(&c.timeout, "timeout", 0, "give up after this long, connecting and calling included (0: no limit)")
	fs.BoolVar(&c.verbose, "v", false, "pass UPSTREAM's stderr through (without it, shown only when the connection fails)")

	var operands []string
	rest := before
	for {
		if err := fs.Parse(rest); err != nil {
			return c, err
		}
		if fs.NArg() == 0 {
			break
		}
		operands = append(operands, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(operands) == 0 {
		return c, errors.New("no operation: give list or call TOOL")
	}
	c.op = operands[0]
	switch c.op {
	case "list":
		if len(operands) > 1 {
			return c, fmt.Errorf("list takes no operand, got %q", operands[1])
		}
	case "call":
		if len(operands) < 2 {
			return c, errors.New("call needs the tool's name: call TOOL ['{\"json\":\"arguments\"}']")
		}
		if len(operands) > 3 {
			return c, fmt.Errorf("call takes TOOL and one JSON object of arguments, got %d operands (quote the JSON)", len(operands)-1)
		}
		c.tool = operands[1]
		if c.tool == "" {
			return c, errors.New("call: the tool's name is empty")
		}
		args := "{}"
		if len(operands) == 3 {
			args = operands[2]
		}
		raw, err := parseArguments(args)
		if err != nil {
			return c, err
		}
		c.arguments = raw
	default:
		return c, fmt.Errorf("unknown operation %q: give list or call TOOL", c.op)
	}
	switch {
	case c.yes && c.no:
		return c, errors.New("-yes and -no exclude each other")
	case c.reason != "" && !c.yes:
		return c, errors.New("-reason goes with -yes (asked on the terminal, the reason follows y)")
	case c.timeout < 0:
		return c, errors.New("-timeout may not be negative")
	case c.url == "" && len(c.upstream) == 0:
		return c, errors.New("no server: give the upstream command after --, or -url")
	case c.url != "" && len(c.upstream) > 0:
		return c, errors.New("give -url or an upstream command after --, not both")
	case c.tokenFile != "" && c.url == "":
		return c, errors.New("-token-file goes with -url")
	}
	if c.url != "" {
		if err := checkEndpoint(c.url, c.tokenFile != ""); err != nil {
			return c, err
		}
	}
	return c, nil
}

// parseArguments reads a call's arguments: one JSON object, read by the
// strict reader (no duplicate member, valid UTF-8, no integer a double
// would round), sent as written.
func parseArguments(s string) (json.RawMessage, error) {
	if len(s) > maxArguments {
		return nil, fmt.Errorf("call: the arguments are %d bytes, at most %d", len(s), maxArguments)
	}
	var m map[string]any
	if err := strictjson.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("call: the arguments are not one JSON object: %v", err)
	}
	if m == nil {
		return nil, errors.New("call: the arguments are null: give a JSON object, such as '{}'")
	}
	return json.RawMessage(s), nil
}

// checkEndpoint checks -url: http or https with a host; a bearer token is
// sent over plain http to a loopback host only.
func checkEndpoint(raw string, withToken bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("-url: %v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-url %q: give an http:// or https:// address with a host", raw)
	}
	if withToken && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return fmt.Errorf("-url %q: a bearer token is sent over plain http to a loopback host only: use https", raw)
	}
	return nil
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readToken reads a bearer token from path: a regular file of at most
// 64 KiB, one token, surrounding whitespace trimmed.
func readToken(path string) (string, error) {
	b, err := osfile.ReadFile(path, maxTokenFile)
	if err != nil {
		return "", fmt.Errorf("-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("-token-file %s is empty: it holds one bearer token", path)
	}
	if i := strings.IndexFunc(tok, func(r rune) bool { return r > unicode.MaxASCII || !strconv.IsPrint(r) || r == ' ' }); i >= 0 {
		return "", fmt.Errorf("-token-file %s: the token has a space or a character other than printable ASCII at byte %d: it holds one token on one line", path, i)
	}
	return tok, nil
}

// tokenTransport adds an Authorization header to every request.
type tokenTransport struct {
	base  http.RoundTripper
	token string
}

func (b tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// isTerminal reports whether r is a character device (a terminal).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// runClient is verity-mcp client: it returns the exit status.
func runClient(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parseClientArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return clientOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "verity-mcp client: %v\n%s\n", err, clientUsageText)
		return clientUsage
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}

	var (
		transport sdk.Transport
		server    string
		upErr     = &tail{max: stderrTail}
	)
	if c.url != "" {
		server = c.url
		hc := &http.Client{}
		if c.tokenFile != "" {
			tok, err := readToken(c.tokenFile)
			if err != nil {
				fmt.Fprintf(stderr, "verity-mcp client: %v\n", err)
				return clientUsage
			}
			hc.Transport = tokenTransport{base: http.DefaultTransport, token: tok}
		}
		transport = &sdk.StreamableClientTransport{Endpoint: c.url, HTTPClient: hc, MaxRetries: -1}
	} else {
		server = c.upstream[0]
		cmd := exec.Command(c.upstream[0], c.upstream[1:]...)
		if c.verbose {
			cmd.Stderr = stderr
		} else {
			cmd.Stderr = upErr
		}
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}
	}
	failed := func(what string, err error) int {
		fmt.Fprintf(stderr, "verity-mcp client: %s %s: %v\n", what, server, err)
		if s := upErr.String(); s != "" {
			fmt.Fprintf(stderr, "its stderr (the end):\n%s", s)
			if !strings.HasSuffix(s, "\n") {
				fmt.Fprintln(stderr)
			}
		}
		return clientUsage
	}

	asker := &terminal{in: bufio.NewReader(stdin), out: stdout, reason: c.reason, echo: !isTerminal(stdin)}
	switch {
	case c.yes:
		asker.mode = answerYes
	case c.no:
		asker.mode = answerNo
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "verity-mcp-client", Version: version},
		&sdk.ClientOptions{ElicitationHandler: asker.elicit})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return failed("connecting to", err)
	}
	defer func() { _ = cs.Close() }()

	switch c.op {
	case "list":
		var tools []*sdk.Tool
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return failed("listing the tools of", err)
			}
			tools = append(tools, tool)
		}
		printTools(stdout, tools)
		return clientOK
	default: // "call"
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.arguments})
		if err != nil {
			var werr *jsonrpc.Error
			if errors.As(err, &werr) {
				// The server answered the call with an error (such as an
				// unknown tool): the call failed, the connection did not.
				fmt.Fprintf(stdout, "error: %s\n", werr.Message)
				return clientToolError
			}
			return failed("calling "+strconv.Quote(c.tool)+" on", err)
		}
		if err := printResult(stdout, res); err != nil {
			fmt.Fprintf(stderr, "verity-mcp client: printing the result: %v\n", err)
			return clientUsage
		}
		if res.IsError {
			fmt.Fprintf(stderr, "verity-mcp client: %s's result is an error (isError)\n", c.tool)
			return clientToolError
		}
		return clientOK
	}
}

// printTools writes one line per tool: its name and the first line of
// its description (or its title).
func printTools(w io.Writer, tools []*sdk.Tool) {
	width := 0
	for _, t := range tools {
		width = max(width, len(t.Name))
	}
	for _, t := range tools {
		about := t.Description
		if about == "" {
			about = t.Title
		}
		about, _, _ = strings.Cut(about, "\n")
		fmt.Fprintf(w, "%s\n", strings.TrimRight(fmt.Sprintf("%-*s  %s", width, oneLine(t.Name), oneLine(about)), " "))
	}
}

// oneLine replaces the control characters of s (a server wrote it) with
// spaces, so that a listing line is one line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// printResult writes a tool's result readably: each text content as text,
// each other content as one line naming it, then the structured content
// as indented JSON (once: a text content that is the same JSON is not
// printed again).
func printResult(w io.Writer, res *sdk.CallToolResult) error {
	var structured []byte
	if res.StructuredContent != nil {
		b, err := json.MarshalIndent(res.StructuredContent, "", "  ")
		if err != nil {
			return fmt.Errorf("structured content: %w", err)
		}
		structured = b
	}
	for _, content := range res.Content {
		var line string
		switch c := content.(type) {
		case *sdk.TextContent:
			if structured != nil && sameJSON(c.Text, structured) {
				continue
			}
			line = c.Text
		case *sdk.ImageContent:
			line = fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.AudioContent:
			line = fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.ResourceLink:
			line = fmt.Sprintf("[resource link %s %s]", c.URI, c.Name)
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
				line = "[embedded resource]"
			case r.Text != "":
				line = fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
			default:
				line = fmt.Sprintf("[resource %s, %d bytes]", r.URI, len(r.Blob))
			}
		default:
			line = fmt.Sprintf("[%T content]", content)
		}
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
		if !strings.HasSuffix(line, "\n") {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
	}
	if structured != nil {
		if _, err := fmt.Fprintf(w, "%s\n", structured); err != nil {
			return err
		}
	}
	return nil
}

// sameJSON reports whether text is JSON equal to want, up to whitespace.
func sameJSON(text string, want []byte) bool {
	var a, b bytes.Buffer
	if json.Compact(&a, []byte(text)) != nil || json.Compact(&b, want) != nil {
		return false
	}
	return bytes.Equal(a.Bytes(), b.Bytes())
}

// answerMode is how the terminal answers questions.
type answerMode int

const (
	answerAsk answerMode = iota // read the answer from stdin
	answerYes                   // -yes: accept every question
	answerNo                    // -no: decline every question
)

// terminal answers the server's elicitations: it prints the question and
// reads the answer from stdin, or answers as -yes/-no says.
type terminal struct {
	mu     sync.Mutex // one question at a time
	in     *bufio.Reader
	out    io.Writer
	mode   answerMode
	reason string // -reason, with -yes
	// echo writes each answer read after its prompt: stdin is not a
	// terminal (which would have shown the typed line), so that the
	// transcript reads as a dialogue.
	echo bool
}

// field is one member of an elicitation form.
type field struct {
	name, kind, title string
	enum              []string
	required          bool
}

// formFields reads the flat form an elicitation asks for (the SDK has
// checked its shape): its properties, in name order.
func formFields(schema any) []field {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := m["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	var fields []field
	for name, p := range props {
		pm, _ := p.(map[string]any)
		f := field{name: name, required: required[name]}
		f.kind, _ = pm["type"].(string)
		f.title, _ = pm["title"].(string)
		if f.title == "" {
			f.title = name
		}
		if es, ok := pm["enum"].([]any); ok {
			for _, e := range es {
				if s, ok := e.(string); ok {
					f.enum = append(f.enum, s)
				}
			}
		}
		fields = append(fields, f)
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.name, b.name) })
	return fields
}

// errNoAnswer is stdin's end before an answer.
var errNoAnswer = errors.New("stdin ended before an answer")

// readLine reads one line from stdin, giving up when ctx ends.
func (t *terminal) readLine(ctx context.Context) (string, error) {
	type line struct {
		s   string
		err error
	}
	ch := make(chan line, 1)
	go func() {
		s, err := t.in.ReadString('\n')
		if err == io.EOF && s != "" {
			err = nil
		}
		ch <- line{strings.TrimSpace(s), err}
	}()
	select {
	case l := <-ch:
		if l.err == io.EOF {
			return "", errNoAnswer
		}
		if l.err == nil && t.echo {
			fmt.Fprintln(t.out, oneLine(l.s))
		}
		return l.s, l.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// elicit is the client's ElicitationHandler.
func (t *terminal) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := req.Params
	fmt.Fprintf(t.out, "? %s\n", strings.ReplaceAll(oneLineKeepNL(p.Message), "\n", "\n  "))
	if p.Mode == "url" {
		// Never advertised (the SDK advertises form elicitation only);
		// a server that asks anyway is declined.
		fmt.Fprintf(t.out, "  declined: this client does not open URLs (%s)\n", oneLine(p.URL))
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	fields := formFields(p.RequestedSchema)

	switch t.mode {
	case answerNo:
		fmt.Fprintln(t.out, "  answered no (-no)")
		return &sdk.ElicitResult{Action: "decline"}, nil
	case answerYes:
		content := map[string]any{}
		for _, f := range fields {
			switch {
			case f.name == "reason" && f.kind == "string" && t.reason != "":
				content["reason"] = t.reason
			case f.required:
				fmt.Fprintf(t.out, "  declined: -yes cannot fill the required field %q\n", f.name)
				return &sdk.ElicitResult{Action: "decline"}, nil
			}
		}
		if t.reason != "" {
			fmt.Fprintf(t.out, "  answered yes (-yes): %s\n", t.reason)
		} else {
			fmt.Fprintln(t.out, "  answered yes (-yes)")
		}
		return &sdk.ElicitResult{Action: "accept", Content: content}, nil
	}

	// Ask: "y" or "n", a reason after y when the form has one.
	var approve bool
	var reason string
	for tries := 0; ; tries++ {
		fmt.Fprint(t.out, "  approve? [y/n, then a reason if you like] ")
		s, err := t.readLine(ctx)
		if err != nil {
			fmt.Fprintf(t.out, "\n  cancelled: %v\n", err)
			return &sdk.ElicitResult{Action: "cancel"}, nil
		}
		word, rest, _ := strings.Cut(s, " ")
		switch strings.ToLower(word) {
		case "y", "yes":
			approve, reason = true, strings.TrimSpace(rest)
		case "n", "no":
		default:
			if tries < 2 {
				fmt.Fprintln(t.out, "  answer y or n")
				continue
			}
			fmt.Fprintln(t.out, "  cancelled: no y or n")
			return &sdk.ElicitResult{Action: "cancel"}, nil
		}
		break
	}
	if !approve {
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	content := map[string]any{}
	for _, f := range fields {
		if f.name == "reason" && f.kind == "string" {
			if reason != "" {
				content["reason"] = reason
			}
			continue
		}
		v, err := t.askField(ctx, f)
		if err != nil {
			fmt.Fprintf(t.out, "\n  cancelled: %v\n", err)
			return &sdk.ElicitResult{Action: "cancel"}, nil
		}
		if v != nil {
			content[f.name] = v
		}
	}
	return &sdk.ElicitResult{Action: "accept", Content: content}, nil
}

// askField reads one form field from stdin: nil for an empty answer to an
// optional field.
func (t *terminal) askField(ctx context.Context, f field) (any, error) {
	for tries := 0; tries < 3; tries++ {
		hint := f.kind
		if len(f.enum) > 0 {
			hint = strings.Join(f.enum, "|")
		}
		if !f.required {
			hint += ", optional"
		}
		fmt.Fprintf(t.out, "  %s (%s): ", oneLine(f.title), hint)
		s, err := t.readLine(ctx)
		if err != nil {
			return nil, err
		}
		if s == "" && !f.required {
			return nil, nil
		}
		v, err := fieldValue(f, s)
		if err == nil {
			return v, nil
		}
		fmt.Fprintf(t.out, "  %v\n", err)
	}
	return nil, fmt.Errorf("no valid %s", f.name)
}

// fieldValue converts a typed answer to the field's type.
func fieldValue(f field, s string) (any, error) {
	switch f.kind {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("answer y or n")
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("answer a whole number")
		}
		return n, nil
	case "number":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errors.New("answer a number")
		}
		return x, nil
	}
	if len(f.enum) > 0 && !slices.Contains(f.enum, s) {
		return nil, fmt.Errorf("answer one of %s", strings.Join(f.enum, ", "))
	}
	return s, nil
}

// oneLineKeepNL replaces control characters other than newlines with
// spaces.
func oneLineKeepNL(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
