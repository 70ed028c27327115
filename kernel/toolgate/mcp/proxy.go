package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate/mcp/upstream"
)

// ErrUpstreamDown: no upstream session is attached to the Proxy (it
// exited and is being restarted, or none was attached yet).
var ErrUpstreamDown = errors.New("toolgate/mcp: the upstream is not running")

// MethodListTools is the MCP method that lists a server's tools.
const MethodListTools = "tools/list"

// RawResult is a result passed on as the JSON its producer wrote: the
// SDK writes JSON a MarshalJSON returns as it is, insignificant
// whitespace aside (internal/jsonrpc2's jsonMarshal: an encoding/json
// Encoder without HTML escaping, which compacts a Marshaler's output and
// keeps every escape sequence, a lone surrogate's "\ud800" included).
// It embeds sdk.ResultBase, which makes it an sdk.Result:
//
//	type ResultBase struct{ Meta `json:"_meta,omitempty"` }  // mcp/shared.go
//	func (*ResultBase) isResult()
type RawResult struct {
	sdk.ResultBase
	// JSON is the result object as received.
	JSON json.RawMessage
}

// MarshalJSON returns r.JSON.
func (r *RawResult) MarshalJSON() ([]byte, error) {
	if len(r.JSON) == 0 {
		return []byte("{}"), nil
	}
	return r.JSON, nil
}

// Proxy serves an upstream MCP server's tools faithfully: tools/list
// returns the upstream's own answer, and a tools/call the upstream's
// own result, as the JSON it wrote (RawResult); the SDK's client decodes
// results into its types (ClientSession.CallTool decodes through
// CallToolResult.UnmarshalJSON, which reads a lone surrogate as U+FFFD,
// and ListTools re-encodes tools through Tool), so the Proxy takes the
// JSON off the connection instead (Transport) and never re-encodes it.
// It follows the upstream's notifications/tools/list_changed, and relays
// the upstream's own requests — elicitation, sampling, roots — to its
// clients, as relay.go says (SetRelay).
//
// Wire it so: the upstream's client is made with Client (ClientOptions
// and RelayMiddleware), connected over Transport(t), and Attach'ed; srv
// is made with ServerOptions, Middleware installed last (innermost, after
// a Guard's) and DownstreamMiddleware first (outermost):
//
//	p := NewProxy(log)
//	srv := sdk.NewServer(impl, p.ServerOptions(nil))
//	srv.AddReceivingMiddleware(guard.Middleware(), p.Middleware())
//	srv.AddReceivingMiddleware(p.DownstreamMiddleware())
//	client := p.Client(impl)
//	up, _ := client.Connect(ctx, p.Transport(&sdk.CommandTransport{…}), nil)
//	names, _ := p.Attach(ctx, srv, up)
//
// A Proxy may be attached to a new upstream session after the last one
// ended (a restarted process); between the two every call fails with
// ErrUpstreamDown, never having reached an upstream.
type Proxy struct {
	log *slog.Logger

	mu      sync.Mutex
	up      *sdk.ClientSession
	srv     *sdk.Server
	names   []string                   // the upstream's tools, in its order
	listed  map[string]bool            // the same, as a set
	lastRaw map[string]json.RawMessage // the last tools/list page received, by cursor
	pins    *Pins                      // the definitions enforced (SetPins); nil: none
	tasks   bool                       // ServeTasks was called (tasks.go)
	params  paramIndex                 // the listing's x-mcp-header annotations (proxy_headers.go)
	twice   []string                   // names the last listing gave more than once (mux.go)
	changed func()                     // called after each listing read, when set (a Mux's)

	rmu sync.Mutex // one refresh at a time: listings are checked in the order read

	pmu     sync.Mutex
	pending map[any]*rawSink // calls in flight by JSON-RPC id

	smu      sync.Mutex
	inflight []*sdk.ServerSession // sessions with a call in progress, oldest first
	last     *sdk.ServerSession   // the session heard from last

	rl relay // the upstream's requests relayed to clients (relay.go)
}

// NewProxy returns a Proxy that logs on log (nowhere when nil).
func NewProxy(log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Proxy{log: log, listed: map[string]bool{}, lastRaw: map[string]json.RawMessage{}, pending: map[any]*rawSink{}}
}

// Listed reports whether the upstream listed tool the last time its
// tools were read.
func (p *Proxy) Listed(tool string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listed[tool]
}

// Tools returns the upstream's tools' names, in its order.
func (p *Proxy) Tools() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.names)
}

// ServerOptions returns opts (a new ServerOptions when nil) advertising
// tools with listChanged, whatever the upstream lists at first.
func (p *Proxy) ServerOptions(opts *sdk.ServerOptions) *sdk.ServerOptions {
	if opts == nil {
		opts = &sdk.ServerOptions{}
	}
	caps := &sdk.ServerCapabilities{}
	if opts.Capabilities != nil {
		c := *opts.Capabilities
		caps = &c
	}
	caps.Tools = &sdk.ToolCapabilities{ListChanged: true}
	opts.Capabilities = caps
	return opts
}

func (p *Proxy) enter(ss *sdk.ServerSession) {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.inflight = append(p.inflight, ss)
	p.last = ss
}

func (p *Proxy) leave(ss *sdk.ServerSession) {
	p.smu.Lock()
	defer p.smu.Unlock()
	if i := slices.Index(p.inflight, ss); i >= 0 {
		p.inflight = slices.Delete(p.inflight, i, i+1)
	}
}

// Attach makes up the upstream the Proxy forwards to, reads its tools
// (every page) and registers their names on srv, so that srv's clients
// are told when they change. It returns the names, in the upstream's
// order.
func (p *Proxy) Attach(ctx context.Context, srv *sdk.Server, up *sdk.ClientSession) ([]string, error) {
	p.mu.Lock()
	p.up, p.srv = up, srv
	clear(p.lastRaw)
	p.mu.Unlock()
	if err := p.refresh(ctx); err != nil {
		return nil, err
	}
	return p.Tools(), nil
}

// Detach forgets the upstream session up (when it is still the one
// attached): calls fail with ErrUpstreamDown until the next Attach.
func (p *Proxy) Detach(up *sdk.ClientSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.up == up {
		p.up = nil
	}
}

func (p *Proxy) session() *sdk.ClientSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

// refresh re-reads the upstream's tools and, when the names changed,
// tells srv's clients (through srv's own tool registry, which the
// Middleware answers for).
func (p *Proxy) refresh(ctx context.Context) error {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	up := p.session()
	if up == nil {
		return ErrUpstreamDown
	}
	var names, twice []string
	var pages []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for {
		raw, err := p.listPage(ctx, up, cursor)
		if err != nil {
			return fmt.Errorf("toolgate/mcp: listing the upstream's tools: %w", err)
		}
		pages = append(pages, raw)
		var page struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("toolgate/mcp: the upstream's tools/list: %w", err)
		}
		for _, t := range page.Tools {
			if !seen[t.Name] {
				seen[t.Name] = true
				names = append(names, t.Name)
			} else {
				twice = append(twice, t.Name)
			}
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			break
		}
		cursor = page.NextCursor
	}
	p.mu.Lock()
	old, srv, ps, changed := p.names, p.srv, p.pins, p.changed
	p.names, p.listed, p.twice = names, seen, twice
	p.mu.Unlock()
	if changed != nil {
		defer changed()
	}
	if ps != nil {
		// The whole listing, at start, on list_changed and after every
		// reconnect: drift is recorded before any client hears of it.
		// A listing Pins cannot check or record hides every tool (they
		// fail closed and say why); the upstream stays attached.
		instr, given := instructionsOf(up)
		_ = ps.Observe(ctx, pages, instr, given, true)
	}
	p.log.Info("upstream tools", "tools", len(names), "names", names)
	if srv != nil {
		// Every name again, so that a change of anything but the names
		// is announced too: RemoveTools and AddTool notify the sessions
		// (Server.changeAndNotify, once for changes close together).
		srv.RemoveTools(old...)
		for _, n := range names {
			srv.AddTool(&sdk.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)}, p.registered)
		}
	}
	return nil
}

// registered is the handler of srv's registry entries: the Middleware
// answers every tools/call before srv's handlers, so it runs only when
// the Middleware is not installed.
func (p *Proxy) registered(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return nil, errors.New("toolgate/mcp: the Proxy's Middleware is not installed")
}

// listPage returns one page of the upstream's tools/list as it wrote
// it. A page the SDK answers from its cache (cache.go's
// cachedListResult, for a result with a ttl) is the last one received.
func (p *Proxy) listPage(ctx context.Context, up *sdk.ClientSession, cursor string) (json.RawMessage, error) {
	sink := &rawSink{}
	_, err := up.ListTools(withSink(ctx, sink), &sdk.ListToolsParams{Cursor: cursor})
	p.forget(sink)
	raw := sink.result()
	p.mu.Lock()
	defer p.mu.Unlock()
	if raw != nil {
		p.lastRaw[cursor] = raw
		return raw, nil
	}
	if err != nil {
		return nil, err
	}
	if raw, ok := p.lastRaw[cursor]; ok {
		return raw, nil
	}
	return nil, errors.New("toolgate/mcp: no tools/list response received")
}

// Middleware returns the receiving middleware that answers tools/list
// and tools/call from the upstream; every other method passes on. Install
// it after (inside) a Guard's.
func (p *Proxy) Middleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
				p.smu.Lock()
				p.last = ss
				p.smu.Unlock()
			}
			switch method {
			case MethodListTools:
				lr, ok := req.(*sdk.ListToolsRequest)
				if !ok {
					return nil, fmt.Errorf("toolgate/mcp: %s request of type %T", method, req)
				}
				up := p.session()
				if up == nil {
					return nil, ErrUpstreamDown
				}
				cursor := ""
				if lr.Params != nil {
					cursor = lr.Params.Cursor
				}
				raw, err := p.listPage(ctx, up, cursor)
				if err != nil {
					return nil, err
				}
				if ps := p.pinsOf(); ps != nil {
					instr, given := instructionsOf(up)
					return ps.listed(ctx, raw, cursor, instr, given)
				}
				return &RawResult{JSON: raw}, nil
			case MethodCallTool:
				cr, ok := req.(*sdk.CallToolRequest)
				if !ok || cr.Params == nil {
					return nil, fmt.Errorf("toolgate/mcp: %s request of type %T", method, req)
				}
				return p.call(ctx, cr)
			}
			return next(ctx, method, req)
		}
	}
}

// call forwards one tools/call: the client's arguments, input responses
// and request state as sent.
func (p *Proxy) call(ctx context.Context, req *sdk.CallToolRequest) (sdk.Result, error) {
	dl := deliveryFrom(ctx)
	dl.forwarded()
	up := p.session()
	if up == nil {
		return upstreamError(ErrUpstreamDown), nil
	}
	p.enter(req.Session)
	defer p.leave(req.Session)
	params := &sdk.CallToolParams{Name: req.Params.Name, InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState,
		Meta: p.taskMeta(req)}
	if len(req.Params.Arguments) > 0 {
		params.Arguments = req.Params.Arguments
	}
	sink := &rawSink{delivery: dl}
	// The caller's own token travels only as far as this call's context,
	// for an upstream whose credential is an exchange of it
	// (upstream.CallContext); it is never sent on as it is.
	res, err := up.CallTool(upstream.CallContext(withSink(ctx, sink), req), params)
	p.forget(sink)
	if raw := sink.result(); raw != nil {
		return &RawResult{JSON: raw}, nil
	}
	if err != nil {
		return upstreamError(err), nil
	}
	return res, nil
}

// upstreamError is the result of a call the upstream did not answer.
func upstreamError(err error) *sdk.CallToolResult {
	return completeResult(fmt.Sprintf("upstream: %v", err))
}

// Transport wraps the upstream's transport so that the Proxy reads the
// upstream's responses as they came. The SDK writes a request with the
// context of the call that sends it (jsonrpc2's Connection.Call passes
// its ctx to Connection.Write), which carries where the response goes:
//
//	type Connection interface {                                   // mcp/transport.go
//		Read(context.Context) (jsonrpc.Message, error)
//		Write(context.Context, jsonrpc.Message) error
//		Close() error
//		SessionID() string
//	}
//	type Response struct{ ID ID; Result json.RawMessage; Error error } // jsonrpc
func (p *Proxy) Transport(t sdk.Transport) sdk.Transport { return &rawTransport{t: t, p: p} }

type rawTransport struct {
	t sdk.Transport
	p *Proxy
}

func (t *rawTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rawConn{Connection: c, p: t.p}, nil
}

type rawConn struct {
	sdk.Connection
	p *Proxy
}

func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, isReq := msg.(*jsonrpc.Request)
	sink, _ := ctx.Value(sinkKey{}).(*rawSink)
	if !isReq || !req.IsCall() || sink == nil {
		return c.Connection.Write(ctx, msg)
	}
	id := req.ID.Raw()
	c.p.pmu.Lock()
	c.p.pending[id] = sink
	sink.id, sink.hasID = id, true
	c.p.pmu.Unlock()
	err := c.Connection.Write(ctx, msg)
	if err == nil && sink.delivery != nil {
		sink.delivery.reached()
	}
	return err
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Error == nil {
		id := resp.ID.Raw()
		c.p.pmu.Lock()
		sink := c.p.pending[id]
		delete(c.p.pending, id)
		c.p.pmu.Unlock()
		if sink != nil {
			sink.set(bytes.Clone(resp.Result))
		}
	}
	return msg, err
}

// rawSink receives one response's result as it came.
type rawSink struct {
	delivery *delivery
	id       any
	hasID    bool
	mu       sync.Mutex
	raw      json.RawMessage
}

func (s *rawSink) set(raw json.RawMessage) {
	s.mu.Lock()
	s.raw = raw
	s.mu.Unlock()
}

func (s *rawSink) result() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw
}

// forget drops the sink of a call that ended (answered, cancelled or
// timed out).
func (p *Proxy) forget(s *rawSink) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if s.hasID && p.pending[s.id] == s {
		delete(p.pending, s.id)
	}
}

type sinkKey struct{}

func withSink(ctx context.Context, s *rawSink) context.Context {
	return context.WithValue(ctx, sinkKey{}, s)
}

// delivery tracks whether a call reached the upstream: a Guard puts one
// in the context of the call it runs, the Proxy says it forwards it
// and, once the request is written to the upstream, that it reached it.
// A forwarded call that did not reach the upstream is never charged.
type delivery struct {
	mu           sync.Mutex
	fwd, arrived bool
}

type deliveryKey struct{}

func withDelivery(ctx context.Context, d *delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, d)
}

func deliveryFrom(ctx context.Context) *delivery {
	d, _ := ctx.Value(deliveryKey{}).(*delivery)
	return d
}

func (d *delivery) forwarded() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.fwd = true
	d.mu.Unlock()
}

func (d *delivery) reached() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.arrived = true
	d.mu.Unlock()
}

// unreached reports whether the call was forwarded and never reached
// the upstream.
func (d *delivery) unreached() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fwd && !d.arrived
}

// filterTools returns a tools/list result without the tools keep
// refuses: the other members, and the tools kept, as they were written,
// in their order.
func filterTools(raw json.RawMessage, keep func(string) bool) (json.RawMessage, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("toolgate/mcp: a tools/list result that is not JSON")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("toolgate/mcp: a tools/list result that is not an object")
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("toolgate/mcp: tools/list result: %w", err)
		}
		start := d.InputOffset()
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("toolgate/mcp: tools/list result: %w", err)
		}
		if k != "tools" {
			continue
		}
		end := d.InputOffset()
		var tools []json.RawMessage
		if err := json.Unmarshal(v, &tools); err != nil {
			return nil, fmt.Errorf("toolgate/mcp: tools/list result: tools: %w", err)
		}
		kept := []byte{'['}
		for _, t := range tools {
			var named struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(t, &named); err != nil {
				return nil, fmt.Errorf("toolgate/mcp: tools/list result: a tool: %w", err)
			}
			if !keep(named.Name) {
				continue
			}
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, t...)
		}
		kept = append(kept, ']')
		out := slices.Concat(raw[:start], []byte{':'}, kept, raw[end:])
		return out, nil
	}
	return nil, fmt.Errorf("toolgate/mcp: a tools/list result without tools")
}
