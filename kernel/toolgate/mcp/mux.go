package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// ErrNoSuchServer: a Mux was asked about a server it does not serve.
var ErrNoSuchServer = errors.New("toolgate/mcp: no such server")

// serverName is the rule of a gateway server's name (gateway.Server.Name):
// it cannot hold gateway.Separator, so a namespaced name splits back
// unambiguously at its first Separator.
var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// MuxServer is one upstream of a Mux.
type MuxServer struct {
	// Name names the server in its tools' names (Name, gateway.Separator,
	// the tool's own name), on the log and in the policy.
	Name string
	// CallTimeout, when positive, bounds each call on the server when its
	// policy rule has no "timeout" of its own, in place of the policy's
	// "timeout": a Guard (Options.Mux) times the call out as it does by
	// a rule's, recording it as failed; without a Guard, the Mux bounds
	// a call whose context has no deadline by it.
	CallTimeout time.Duration
	// Pins, when set, are the server's pinned definitions (NewPins with
	// PinOptions.Server Name): its tools are checked against them as a
	// Proxy's are (Proxy.SetPins), under their own names.
	Pins *Pins
}

// Mux serves the tools of several upstream MCP servers behind one
// server, each upstream through a Proxy of its own (Proxy stays the
// faithful relay of one upstream).
//
// Names. A client sees each tool as its server's name,
// gateway.Separator ("__") and the tool's own name: server "github"'s
// tool "create_issue" is "github__create_issue". Server names follow
// gateway.Server.Name's rule (no "_"), so a name splits back at its first
// Separator, and two servers' tools never share a name; an upstream that
// lists one name twice is refused at Attach with an error naming the
// server and the tool.
//
// Order. The merged tools/list is deterministic: the servers in the
// order they were added (a gateway file's order), each server's tools
// in the order it lists them, each tool's definition as its server wrote
// it with only its "name" member replaced. It is one page (no
// nextCursor); the upstreams' other members (_meta, caching hints) are
// not carried over. A server that is down (never attached, or detached
// when it exited) is left out, and so are its tools' calls: a call of a
// server that is down fails with ErrUpstreamDown before it reaches any
// upstream, which the Guard charges nothing for.
//
// Changes. Whenever a server's listing is read (Attach, its
// notifications/tools/list_changed) or it goes down (Detach), the merged
// names are registered on the server again, which sends every client a
// notifications/tools/list_changed.
//
// Wire it as a Proxy, with the Mux's Middleware and a Guard whose
// Options.Mux is the Mux; each upstream's client is made with its
// Proxy's ClientOptions and RelayMiddleware and connected over its
// Proxy's Transport, and attached with Mux.Attach:
//
//	m := NewMux(log)
//	p, _ := m.Add(MuxServer{Name: "files"})
//	srv := sdk.NewServer(impl, m.ServerOptions(nil))
//	guard, _ := New(gate, Options{Mux: m})
//	srv.AddReceivingMiddleware(guard.Middleware(), m.Middleware())
//	client := sdk.NewClient(impl, p.ClientOptions())
//	client.AddReceivingMiddleware(p.RelayMiddleware())
//	up, _ := client.Connect(ctx, p.Transport(&sdk.CommandTransport{…}), nil)
//	_ = m.Attach(ctx, srv, "files", up)
//
// A Mux is safe for concurrent use.
type Mux struct {
	log *slog.Logger

	mu      sync.Mutex
	order   []string
	servers map[string]*MuxServer
	proxies map[string]*Proxy
	srv     *sdk.Server

	rmu        sync.Mutex // one registration at a time
	registered []string   // the names registered on srv
}

// NewMux returns a Mux of no servers that logs on log (nowhere when
// nil).
func NewMux(log *slog.Logger) *Mux {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Mux{log: log, servers: map[string]*MuxServer{}, proxies: map[string]*Proxy{}}
}

// Add adds a server after the others and returns its Proxy, whose
// ClientOptions, RelayMiddleware and Transport its upstream's client is
// made with. A name that breaks gateway.Server.Name's rule, or is served
// already, is an error.
func (m *Mux) Add(s MuxServer) (*Proxy, error) {
	if !serverName.MatchString(s.Name) {
		return nil, fmt.Errorf("toolgate/mcp: server name %q: want 1 to 32 of a-z, 0-9 and '-', starting with a letter or digit", s.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.servers[s.Name]; dup {
		return nil, fmt.Errorf("toolgate/mcp: server %q is served already: server names are unique", s.Name)
	}
	p := NewProxy(m.log.With("server", s.Name))
	p.SetPins(s.Pins)
	name := s.Name
	p.changed = func() { m.sync(name) }
	m.servers[s.Name], m.proxies[s.Name] = &s, p
	m.order = append(m.order, s.Name)
	return p, nil
}

// Remove stops serving a server: its tools leave the list (its upstream
// session is the caller's to close).
func (m *Mux) Remove(name string) {
	m.mu.Lock()
	_, ok := m.servers[name]
	delete(m.servers, name)
	delete(m.proxies, name)
	m.order = slices.DeleteFunc(m.order, func(n string) bool { return n == name })
	m.mu.Unlock()
	if ok {
		m.register()
	}
}

// Reorder puts the servers in the order names gives (those it does not
// name after, in their order).
func (m *Mux) Reorder(names []string) {
	m.mu.Lock()
	var order []string
	for _, n := range names {
		if _, ok := m.servers[n]; ok && !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	for _, n := range m.order {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	m.order = order
	m.mu.Unlock()
	m.register()
}

// Servers returns the servers' names, in order.
func (m *Mux) Servers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.order)
}

// Proxy returns a server's Proxy, nil when the Mux does not serve it.
func (m *Mux) Proxy(server string) *Proxy {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proxies[server]
}

// PinsOf returns a server's Pins, nil when it has none.
func (m *Mux) PinsOf(server string) *Pins {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.servers[server]; s != nil {
		return s.Pins
	}
	return nil
}

// Split splits a namespaced tool name at its first gateway.Separator
// into its server's name and the tool's own; ok is false when the name
// has no Separator or names no server the Mux serves.
func (m *Mux) Split(name string) (server, tool string, ok bool) {
	server, tool, cut := strings.Cut(name, gateway.Separator)
	if !cut || tool == "" {
		return "", "", false
	}
	m.mu.Lock()
	_, ok = m.servers[server]
	m.mu.Unlock()
	return server, tool, ok
}

// ServerOptions returns opts (a new ServerOptions when nil) advertising
// tools with listChanged (Proxy.ServerOptions).
func (m *Mux) ServerOptions(opts *sdk.ServerOptions) *sdk.ServerOptions {
	return (&Proxy{}).ServerOptions(opts)
}

// Attach makes up server's upstream session, reads its tools and
// registers the merged names on srv. An upstream whose listing names a
// tool twice is refused (and stays unattached): its namespaced name
// would name two tools.
func (m *Mux) Attach(ctx context.Context, srv *sdk.Server, server string, up *sdk.ClientSession) error {
	m.mu.Lock()
	p := m.proxies[server]
	if p != nil {
		m.srv = srv
	}
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%w: %q", ErrNoSuchServer, server)
	}
	if _, err := p.Attach(ctx, nil, up); err != nil {
		p.Detach(up)
		m.register()
		return fmt.Errorf("server %q: %w", server, err)
	}
	p.mu.Lock()
	twice := slices.Clone(p.twice)
	p.mu.Unlock()
	if len(twice) > 0 {
		p.Detach(up)
		m.register()
		slices.Sort(twice)
		twice = slices.Compact(twice)
		return fmt.Errorf("server %q lists tool %q more than once: its name %q would name two tools; fix the server",
			server, twice[0], server+gateway.Separator+twice[0])
	}
	return nil
}

// Detach marks server down when up is still its session: its tools
// leave the list (the clients are told) and its calls fail with
// ErrUpstreamDown until the next Attach.
func (m *Mux) Detach(server string, up *sdk.ClientSession) {
	if p := m.Proxy(server); p != nil {
		p.Detach(up)
		m.register()
	}
}

// Up reports whether server has an upstream session attached.
func (m *Mux) Up(server string) bool {
	p := m.Proxy(server)
	return p != nil && p.session() != nil
}

// sync is a Proxy's notice that server's listing was read.
func (m *Mux) sync(server string) {
	p := m.Proxy(server)
	if p == nil {
		return
	}
	p.mu.Lock()
	twice := len(p.twice) > 0
	p.mu.Unlock()
	if twice {
		// A listing that names a tool twice is not served (Attach): the
		// session is closed, so that its host restarts the server (and
		// Attach refuses it again until it lists each name once).
		p.mu.Lock()
		up := p.up
		p.up = nil
		p.mu.Unlock()
		if up != nil {
			go func() { _ = up.Close() }()
		}
		m.log.Error("a server lists a tool more than once: its session is closed and its tools left out", "server", server)
	}
	m.register()
}

// Tools returns the namespaced names of the servers that are up, in the
// merged list's order.
func (m *Mux) Tools() []string {
	var out []string
	for _, s := range m.Servers() {
		p := m.Proxy(s)
		if p == nil || p.session() == nil {
			continue
		}
		for _, t := range p.Tools() {
			out = append(out, s+gateway.Separator+t)
		}
	}
	return out
}

// Listed reports whether name is a tool of a server that is up and
// listed it the last time its tools were read (a Guard's Options.Listed).
func (m *Mux) Listed(name string) bool {
	server, tool, ok := m.Split(name)
	if !ok {
		return false
	}
	p := m.Proxy(server)
	return p != nil && p.session() != nil && p.Listed(tool)
}

// register registers the merged names on the server: every name again,
// so that any change is announced (Proxy.refresh does the same).
func (m *Mux) register() {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	m.mu.Lock()
	srv := m.srv
	m.mu.Unlock()
	if srv == nil {
		return
	}
	names := m.Tools()
	srv.RemoveTools(m.registered...)
	for _, n := range names {
		srv.AddTool(&sdk.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)}, (&Proxy{}).registered)
	}
	m.registered = names
}

// Middleware returns the receiving middleware that answers tools/list
// with the merged list and routes tools/call to the server its name
// names, under the tool's own name; every other method passes on.
// Install it after (inside) a Guard's.
func (m *Mux) Middleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch method {
			case MethodListTools:
				lr, ok := req.(*sdk.ListToolsRequest)
				if !ok {
					return nil, fmt.Errorf("toolgate/mcp: %s request of type %T", method, req)
				}
				if lr.Params != nil && lr.Params.Cursor != "" {
					return nil, fmt.Errorf("toolgate/mcp: tools/list cursor %.40q: the gateway's list is one page", lr.Params.Cursor)
				}
				return m.list(ctx)
			case MethodCallTool:
				cr, ok := req.(*sdk.CallToolRequest)
				if !ok || cr.Params == nil {
					return nil, fmt.Errorf("toolgate/mcp: %s request of type %T", method, req)
				}
				return m.call(ctx, cr)
			}
			return next(ctx, method, req)
		}
	}
}

// call routes one tools/call to its server.
func (m *Mux) call(ctx context.Context, req *sdk.CallToolRequest) (sdk.Result, error) {
	server, tool, ok := m.Split(req.Params.Name)
	m.mu.Lock()
	p, s := m.proxies[server], m.servers[server]
	m.mu.Unlock()
	if !ok || p == nil {
		deliveryFrom(ctx).forwarded() // never reached an upstream
		return upstreamError(fmt.Errorf("%w: tool %q names no server of the gateway", ErrNoSuchServer, req.Params.Name)), nil
	}
	if p.session() == nil {
		deliveryFrom(ctx).forwarded()
		return upstreamError(fmt.Errorf("server %q: %w", server, ErrUpstreamDown)), nil
	}
	if _, has := ctx.Deadline(); !has && s.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.CallTimeout)
		defer cancel()
	}
	params := *req.Params
	params.Name = tool
	r := *req
	r.Params = &params
	return p.call(ctx, &r)
}

// list is the merged tools/list: each server that is up, read whole
// (every page) and checked against its pins as a Proxy's list is, its
// tools renamed. A server whose listing cannot be read now is left out,
// with a warning.
func (m *Mux) list(ctx context.Context) (sdk.Result, error) {
	out := []byte(`{"tools":[`)
	first := true
	for _, server := range m.Servers() {
		p := m.Proxy(server)
		if p == nil {
			continue
		}
		up := p.session()
		if up == nil {
			continue
		}
		tools, err := p.listAll(ctx, up)
		if err != nil {
			m.log.Warn("listing a server's tools: left out of tools/list", "server", server, "err", err)
			continue
		}
		for _, t := range tools {
			named, err := renameTool(t, func(n string) string { return server + gateway.Separator + n })
			if err != nil {
				m.log.Warn("a tool of the server left out of tools/list", "server", server, "err", err)
				continue
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = append(out, named...)
		}
	}
	out = append(out, "]}"...)
	return &RawResult{JSON: out}, nil
}

// listAll reads every page of the upstream's tools/list and returns its
// tools as it wrote them, without those its pins do not show.
func (p *Proxy) listAll(ctx context.Context, up *sdk.ClientSession) ([]json.RawMessage, error) {
	var pages []json.RawMessage
	cursor := ""
	for range maxPages {
		raw, err := p.listPage(ctx, up, cursor)
		if err != nil {
			return nil, err
		}
		pages = append(pages, raw)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(raw, &next)
		if next.NextCursor == "" || next.NextCursor == cursor {
			break
		}
		cursor = next.NextCursor
	}
	ps := p.pinsOf()
	if ps != nil {
		instr, given := instructionsOf(up)
		if err := ps.Observe(ctx, pages, instr, given, true); err != nil {
			return nil, err
		}
	}
	var tools []json.RawMessage
	for _, raw := range pages {
		var page struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("toolgate/mcp: the upstream's tools/list: %w", err)
		}
		for _, t := range page.Tools {
			if ps != nil {
				var named struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(t, &named) != nil || !ps.Visible(named.Name) {
					continue
				}
			}
			tools = append(tools, t)
		}
	}
	return tools, nil
}

// maxPages bounds the pages of one upstream listing read for the merged
// list.
const maxPages = 1000

// renameTool returns a tool definition, a JSON object, with its "name"
// member's value replaced by rename of it; every other byte as written.
// A definition with no name, a name that is not a string, two "name"
// members or one spelled in another case (which readers take
// differently) is an error.
func renameTool(raw json.RawMessage, rename func(string) string) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("toolgate/mcp: a tool that is not an object")
	}
	var out json.RawMessage
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("toolgate/mcp: a tool: %w", err)
		}
		start := d.InputOffset()
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("toolgate/mcp: a tool: %w", err)
		}
		if key, _ := k.(string); key != "name" {
			if strings.EqualFold(key, "name") {
				// Decoders that match members without regard to case
				// (encoding/json's) could read it as the name.
				return nil, fmt.Errorf("toolgate/mcp: a tool with a member %q", key)
			}
			continue
		}
		if out != nil {
			return nil, errors.New("toolgate/mcp: a tool with two names")
		}
		var name string
		if err := json.Unmarshal(v, &name); err != nil || name == "" {
			return nil, errors.New("toolgate/mcp: a tool whose name is not a string")
		}
		end := d.InputOffset()
		quoted, err := json.Marshal(rename(name))
		if err != nil {
			return nil, err
		}
		out = slices.Concat(raw[:start], []byte{':'}, quoted, raw[end:])
	}
	if _, err := d.Token(); err != nil {
		return nil, fmt.Errorf("toolgate/mcp: a tool: %w", err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("toolgate/mcp: data after a tool")
	}
	if out == nil {
		return nil, errors.New("toolgate/mcp: a tool without a name")
	}
	return out, nil
}

// refusalOf is the one line a call of name that is not Listed reads: a
// server that is down is named as such.
func (m *Mux) refusalOf(name string) string {
	if server, _, ok := m.Split(name); ok && !m.Up(server) {
		return fmt.Sprintf("tool %q refused: server %q is not running (it is restarted by its restart policy); nothing was charged", name, server)
	}
	return fmt.Sprintf("tool %q refused: the gateway has no such tool (tools are named server%stool)", name, gateway.Separator)
}

// pinnedName is the name a call's tool is pinned under: the tool's own
// name, without its server's and gateway.Separator when the call is on a
// gateway's server (toolgate.Call.Server).
func pinnedName(call toolgate.Call) string {
	if call.Server == "" {
		return call.Tool
	}
	return strings.TrimPrefix(call.Tool, call.Server+gateway.Separator)
}

// timeoutOf is how long a call on server decided under ref waits for
// its tool: the rule's own "timeout", else the server's CallTimeout,
// else the policy's "timeout" (folded, as Compiled.RuleOf gives it).
func (m *Mux) timeoutOf(server string, comp *toolgate.Compiled, ref toolgate.RuleRef, folded time.Duration) time.Duration {
	m.mu.Lock()
	s := m.servers[server]
	m.mu.Unlock()
	if s == nil || s.CallTimeout <= 0 || !ref.Found {
		return folded
	}
	p := comp.Policy()
	var own time.Duration
	switch {
	case ref.Index < 0 && p.DefaultRule != nil:
		own = p.DefaultRule.Timeout
	case ref.Index >= 0 && ref.Index < len(p.Tools):
		own = p.Tools[ref.Index].Timeout
	}
	if own > 0 {
		return own
	}
	return s.CallTimeout
}
