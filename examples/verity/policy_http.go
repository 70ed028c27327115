package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// The MCP client of "policy check -config" for a streamable HTTP
// upstream, written with net/http alone: each JSON-RPC message is a POST
// to the endpoint, answered with one JSON body or a text/event-stream
// whose events carry the response (MCP 2025-06-18, "Streamable HTTP").
// It sends the session id the server gave at initialize, the negotiated
// protocol version, and the 2026-07-28 Mcp-Method and Mcp-Name headers
// (which equal the body's), and follows no redirect, so that a credential
// header never travels to another address.
type httpClient struct {
	ctx     context.Context
	url     string
	client  *http.Client
	header  http.Header // the auth header, when the server has one
	session string      // Mcp-Session-Id
	version string      // the protocol version after initialize
	nextID  int
}

// newHTTPClient returns a client of the endpoint url: TLS verified by the
// system's CAs, or by those of caPEM when given.
func newHTTPClient(ctx context.Context, url string, caPEM []byte, header http.Header) (*httpClient, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if caPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("ca_file holds no PEM certificate")
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	c := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the server redirects to %s: not followed (the credentials are for %s only)", req.URL.Redacted(), url)
	}}
	return &httpClient{ctx: ctx, url: url, client: c, header: header}, nil
}

func (c *httpClient) send(m rpcMessage) error {
	_, err := c.post(c.ctx, m)
	return err
}

func (c *httpClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	m, err := c.post(ctx, rpcMessage{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if m.Error != nil {
		return nil, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
	}
	if method == "initialize" {
		var init struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Result, &init)
		c.version = init.ProtocolVersion
	}
	return m.Result, nil
}

// post sends m and returns the response to it (the zero message for a
// notification, which the server accepts with 202).
func (c *httpClient) post(ctx context.Context, m rpcMessage) (rpcMessage, error) {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		return rpcMessage{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return rpcMessage{}, err
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", m.Method)
	if name := toolOrResourceName(m.Params); name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return rpcMessage{}, err
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && m.Method == "initialize" {
		c.session = s
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		why := "the server refused the gateway's credentials"
		if len(c.header) == 0 {
			why = "the server wants credentials and the gateway file gives it none (auth)"
		}
		return rpcMessage{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, why)
	case m.ID == nil && resp.StatusCode == http.StatusAccepted:
		return rpcMessage{}, nil
	case resp.StatusCode != http.StatusOK:
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 200)).ReadString('\n')
		return rpcMessage{}, fmt.Errorf("HTTP %s: %q", resp.Status, strings.TrimSpace(line))
	case m.ID == nil:
		return rpcMessage{}, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, mcpMaxMessage+1))
		if err != nil {
			return rpcMessage{}, err
		}
		if len(b) > mcpMaxMessage {
			return rpcMessage{}, fmt.Errorf("the answer is over %d bytes", mcpMaxMessage)
		}
		var out rpcMessage
		if err := json.Unmarshal(b, &out); err != nil || string(out.ID) != string(m.ID) {
			return rpcMessage{}, fmt.Errorf("the answer is not the JSON-RPC response to request %s: %.80q", m.ID, b)
		}
		return out, nil
	case "text/event-stream":
		return readEvents(resp.Body, m.ID)
	}
	return rpcMessage{}, fmt.Errorf("the answer's Content-Type %q is neither application/json nor text/event-stream", resp.Header.Get("Content-Type"))
}

// readEvents reads server-sent events until one carries the response to
// id; the server's requests and notifications on the stream are skipped.
func readEvents(r io.Reader, id json.RawMessage) (rpcMessage, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var data bytes.Buffer
	for {
		line, err := readLine(br, mcpMaxMessage)
		if len(line) == 0 && err != nil {
			var m rpcMessage
			if data.Len() > 0 && json.Unmarshal(data.Bytes(), &m) == nil && m.Method == "" && string(m.ID) == string(id) {
				return m, nil // the last event, not followed by a blank line
			}
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("the event stream ended without the response to request %s", id)
			}
			return rpcMessage{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0: // the end of an event
			if data.Len() == 0 {
				continue
			}
			var m rpcMessage
			if json.Unmarshal(data.Bytes(), &m) == nil && m.Method == "" && string(m.ID) == string(id) {
				return m, nil
			}
			data.Reset()
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
			if data.Len() > mcpMaxMessage {
				return rpcMessage{}, fmt.Errorf("an event is over %d bytes", mcpMaxMessage)
			}
		}
	}
}

// toolOrResourceName is the Mcp-Name of a request: the params' name or
// uri (tools/call, prompts/get, resources/read), "" for the others.
func toolOrResourceName(params any) string {
	m, ok := params.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"name", "uri"} {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

// close ends the session (DELETE), when the server gave one.
func (c *httpClient) close() {
	if c.session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	if resp, err := c.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// listHTTP lists the tools of a streamable HTTP server.
func listHTTP(ctx context.Context, url string, caPEM []byte, header http.Header) (upstreamListing, error) {
	c, err := newHTTPClient(ctx, url, caPEM, header)
	if err != nil {
		return upstreamListing{}, err
	}
	defer c.close()
	l, err := listTools(ctx, c)
	if err != nil && ctx.Err() != nil {
		return upstreamListing{}, fmt.Errorf("no answer in time: %w", err)
	}
	return l, err
}
