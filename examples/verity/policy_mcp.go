package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// The MCP client of "policy check -- UPSTREAM": just enough of the
// protocol over stdio (newline-delimited JSON-RPC 2.0 messages) to ask a
// server for its tools — initialize, notifications/initialized, then
// tools/list until its nextCursor is empty.
const (
	mcpProtocolVersion = "2025-06-18"
	// mcpMaxMessage bounds one message from the server.
	mcpMaxMessage = 16 << 20
	// mcpMaxPages bounds tools/list's pagination.
	mcpMaxPages = 1000
)

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// stdioClient is a running upstream server and the JSON-RPC session with
// it.
type stdioClient struct {
	in     io.WriteCloser
	out    *bufio.Reader
	nextID int
	lines  chan []byte
	quit   chan struct{} // closed when the client stops reading

	mu      sync.Mutex
	readErr error
}

// upstreamListing is what a server said of itself and its tools: its
// name and instructions (initialize) and every page of tools/list, as
// sent.
type upstreamListing struct {
	server       string // serverInfo.name
	instructions string
	hasInstr     bool     // the server gave instructions
	names        []string // the tools' names, every page
	pages        []json.RawMessage
	file         bool // read from a tools file: no name, no instructions
}

// listUpstream starts argv, lists its tools and stops it: what the server
// said of itself and its tools. The server's standard error goes to
// stderr; ctx bounds the whole exchange.
func listUpstream(ctx context.Context, argv []string, stderr io.Writer) (upstreamListing, error) {
	return listStdio(ctx, argv, nil, "", stderr)
}

// listStdio is listUpstream with the command's environment (nil: this
// process's) and working directory ("": this process's).
func listStdio(ctx context.Context, argv, env []string, dir string, stderr io.Writer) (upstreamListing, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stderr = stderr
	cmd.WaitDelay = 2 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return upstreamListing{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return upstreamListing{}, err
	}
	if err := cmd.Start(); err != nil {
		return upstreamListing{}, err
	}
	c := &stdioClient{in: in, out: bufio.NewReaderSize(out, 64<<10), lines: make(chan []byte), quit: make(chan struct{})}
	go c.read()
	defer close(c.quit)
	tools, err := listTools(ctx, c)
	_ = in.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if ctx.Err() != nil {
			return upstreamListing{}, fmt.Errorf("no answer in time: %w", err)
		}
		return upstreamListing{}, err
	}
	// A server exits when its input closes; one that does not is stopped.
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	_ = cmd.Wait()
	close(done)
	return tools, nil
}

// read delivers the server's lines until its output ends.
func (c *stdioClient) read() {
	defer close(c.lines)
	for {
		line, err := readLine(c.out, mcpMaxMessage)
		if len(bytes.TrimSpace(line)) > 0 {
			select {
			case c.lines <- line:
			case <-c.quit:
				return
			}
		}
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
	}
}

// readLine reads one line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("a message over %d bytes", max)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func (c *stdioClient) send(m rpcMessage) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// call sends a request and waits for its response, answering the
// server's own requests with "method not found" and skipping its
// notifications meanwhile.
func (c *stdioClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	if err := c.send(rpcMessage{ID: id, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", method, ctx.Err())
		case l, ok := <-c.lines:
			if !ok {
				c.mu.Lock()
				err := c.readErr
				c.mu.Unlock()
				if errors.Is(err, io.EOF) {
					err = errors.New("the server closed its output")
				}
				return nil, fmt.Errorf("%s: %w", method, err)
			}
			line = l
		}
		var m rpcMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s: the server wrote something that is not JSON-RPC: %.80q", method, line)
		}
		switch {
		case m.Method != "" && m.ID != nil: // a request of the server's
			_ = c.send(rpcMessage{ID: m.ID, Error: &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{-32601, "method not found"}})
		case m.Method != "": // a notification
		case string(m.ID) == string(id):
			if m.Error != nil {
				return nil, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
			}
			return m.Result, nil
		}
	}
}

// rpcConn is a JSON-RPC session with an MCP server: over stdio
// (stdioClient) or streamable HTTP (httpClient).
type rpcConn interface {
	call(ctx context.Context, method string, params any) (json.RawMessage, error)
	send(m rpcMessage) error
}

// listTools initializes the session and lists every page of the
// server's tools.
func listTools(ctx context.Context, c rpcConn) (upstreamListing, error) {
	var u upstreamListing
	res, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": mcpProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "verity-policy-check", "version": "1"},
	})
	if err != nil {
		return u, err
	}
	var init struct {
		Capabilities struct {
			Tools *json.RawMessage `json:"tools"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
		Instructions *string `json:"instructions"`
	}
	if err := json.Unmarshal(res, &init); err != nil {
		return u, fmt.Errorf("initialize: %w", err)
	}
	if init.Capabilities.Tools == nil {
		return u, errors.New("the server offers no tools (no tools capability)")
	}
	u.server = init.ServerInfo.Name
	if init.Instructions != nil {
		u.instructions, u.hasInstr = *init.Instructions, true
	}
	if err := c.send(rpcMessage{Method: "notifications/initialized"}); err != nil {
		return u, err
	}
	cursor := ""
	for page := 0; ; page++ {
		if page == mcpMaxPages {
			return u, fmt.Errorf("tools/list: more than %d pages", mcpMaxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return u, err
		}
		got, err := parseToolsList(res)
		if err != nil {
			return u, fmt.Errorf("tools/list: %w", err)
		}
		u.names = append(u.names, got...)
		u.pages = append(u.pages, res)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(res, &next)
		if next.NextCursor == "" {
			return u, nil
		}
		if next.NextCursor == cursor {
			return u, fmt.Errorf("tools/list: the server returned the same cursor %q again", strings.TrimSpace(cursor))
		}
		cursor = next.NextCursor
	}
}
