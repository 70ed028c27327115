package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// This file is how a Proxy relays its upstream's own requests —
// elicitation/create, sampling/createMessage, roots/list — to the
// clients connected to it, and what it offers the upstream.
//
// Roots. The upstream's client is offered roots only when, at the time
// it is made (ClientOptions), a client connected to the Proxy offers
// them; the Proxy never answers roots/list itself. The SDK's client
// sends its capabilities once, in initialize, from what ClientOptions
// gave NewClient:
//
//	func (c *Client) capabilities(protocolVersion string) *ClientCapabilities  // mcp/client.go: c.opts.Capabilities cloned
//	func (c *Client) Connect(ctx, t, opts) (*ClientSession, error)            // InitializeParams{Capabilities: c.capabilities(v)}
//
// so an upstream started before any client — the proxy starts it first —
// is not offered roots, and when the first client offering them arrives
// the Proxy has it started again (RelayOptions.Renew), this time
// offering them; the client's requests wait for that (at most
// renewWait). A roots/list goes to the client that offers roots and
// connected first of those still connected: one upstream sees one
// client's roots. When that client says its roots changed, leaves (and
// another offering roots remains), or when the first one arrives after
// none was left, the upstream is sent notifications/roots/list_changed
// and asks again. A roots/list while no client offering roots is
// connected waits up to RelayOptions.RootsWait for one, then fails.
//
// The SDK server reads a client's capabilities into ClientCapabilities,
// whose Roots is a struct (RootsV2 is `json:"-"`), so `"roots":{}` and
// no roots read alike: a client offers roots here when it declares
// "roots": {"listChanged": true}, as the SDKs' clients do.

// DefaultRootsWait is how long an upstream's roots/list waits for a
// client that offers roots when RelayOptions.RootsWait is zero.
const DefaultRootsWait = 10 * time.Second

// renewWait bounds how long a client's request waits for the upstream
// to be started again, offering roots.
var renewWait = 30 * time.Second

// renewDrain bounds how long the upstream's calls in progress may run
// before it is started again.
const renewDrain = 10 * time.Second

// busy reports whether a call is in progress on the upstream.
func (p *Proxy) busy() bool {
	p.smu.Lock()
	defer p.smu.Unlock()
	return len(p.inflight) > 0
}

// rootsSignal is the root the upstream's client holds so that
// Client.AddRoots sends notifications/roots/list_changed (the SDK has no
// other way to send it: client.go's changeAndNotify). It is never
// listed: RelayMiddleware answers every roots/list from a client.
const rootsSignal = "urn:verity-mcp:roots-changed"

// SamplingTools is what the Proxy does with a relayed
// sampling/createMessage that offers the model tools the caller may not
// call.
type SamplingTools int

const (
	// SamplingRefuse refuses the request: the upstream gets an error,
	// the client never sees it.
	SamplingRefuse SamplingTools = iota
	// SamplingDrop relays it without those tools.
	SamplingDrop
)

// RelayOptions say how a Proxy relays its upstream's requests (SetRelay).
// The zero value is the strictest: no URL elicitation is relayed, a
// sampling request that offers any tool is refused (nothing says which
// the caller may call), roots are relayed, nothing is logged.
type RelayOptions struct {
	// MayCall reports whether the client req comes from may call tool
	// (for a Guard: Guard.MayCall). req is the client's call in
	// progress, or a call made of its latest request (session, Extra);
	// ctx that request's context. Nil: it may call none.
	MayCall func(ctx context.Context, req *sdk.CallToolRequest, tool string) bool
	// Caller names a client in the log entries (for a Guard:
	// Guard.Caller). Nil: the session id.
	Caller func(ctx context.Context, req *sdk.CallToolRequest) string
	// SamplingTools: what to do with tools MayCall refuses.
	SamplingTools SamplingTools
	// URLOrigins are the origins (ParseOrigin) a URL-mode elicitation
	// may send the client's human to. Every other URL, and every one that
	// is not https, is refused.
	URLOrigins []string
	// NoRoots: never offer the upstream roots.
	NoRoots bool
	// RootsWait is how long an upstream's roots/list waits for a client
	// offering roots to connect (DefaultRootsWait when zero).
	RootsWait time.Duration
	// Renew starts the upstream again, with a client made by Client (or
	// ClientOptions) now, and returns once it is attached; nil: an
	// upstream started before a client offering roots arrived is never
	// offered them.
	Renew func(context.Context) error
	// Log, when set, records every URL-mode elicitation and every
	// sampling request with tools (gatelog.KindRelay).
	Log *trace.Log
}

// relay is the Proxy's state for relaying (see the top of this file).
type relay struct {
	mu         sync.Mutex
	opts       RelayOptions
	origins    map[string]bool
	clients    []*downstream                      // initialized clients, in the order they arrived
	byss       map[*sdk.ServerSession]*downstream // the same, by session
	advertised bool                               // the upstream's latest client was offered roots
	client     *sdk.Client                        // the upstream's latest client (Client)
	owner      *sdk.ServerSession
	renewing   chan struct{} // closed when the renewal ends; nil when none runs
	arrived    chan struct{} // closed (and replaced) when a client offering roots arrives
}

// downstream is a client connected to the Proxy's server.
type downstream struct {
	ss    *sdk.ServerSession
	roots bool
	ctx   context.Context   // of its latest request: its values (the principal) are read
	extra *sdk.RequestExtra // of its latest request
}

// SetRelay sets how the Proxy relays its upstream's requests; an error
// names an origin ParseOrigin refuses.
func (p *Proxy) SetRelay(o RelayOptions) error {
	origins := map[string]bool{}
	for _, s := range o.URLOrigins {
		origin, err := ParseOrigin(s)
		if err != nil {
			return fmt.Errorf("toolgate/mcp: URL elicitation allow-list: %w", err)
		}
		origins[origin] = true
	}
	if o.SamplingTools != SamplingRefuse && o.SamplingTools != SamplingDrop {
		return fmt.Errorf("toolgate/mcp: unknown SamplingTools %d", o.SamplingTools)
	}
	if o.RootsWait < 0 {
		return fmt.Errorf("toolgate/mcp: a negative RootsWait %s", o.RootsWait)
	}
	p.rl.mu.Lock()
	defer p.rl.mu.Unlock()
	o.URLOrigins = slices.Clone(o.URLOrigins)
	p.rl.opts, p.rl.origins = o, origins
	return nil
}

// ClientOptions returns the options of the upstream's client: it follows
// the upstream's tools/list_changed, and advertises what it relays —
// sampling (with tools), form and URL elicitation, and roots (with
// listChanged) when a client connected now offers them — so that the
// upstream asks. Each call decides roots anew: make the upstream's
// client (Client) when starting it.
func (p *Proxy) ClientOptions() *sdk.ClientOptions {
	caps := &sdk.ClientCapabilities{
		//lint:ignore SA1019 the proxy relays sampling to clients on protocols before 2026-07-28, where it is not deprecated
		Sampling:    &sdk.SamplingCapabilities{Tools: &sdk.SamplingToolsCapabilities{}},
		Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}},
	}
	p.rl.mu.Lock()
	p.rl.advertised = !p.rl.opts.NoRoots && p.rl.rootsClient() != nil
	if p.rl.advertised {
		//lint:ignore SA1019 the proxy relays roots to clients on protocols before 2026-07-28, where they are not deprecated
		caps.RootsV2 = &sdk.RootCapabilities{ListChanged: true}
	}
	p.rl.owner = nil // a new upstream has been told of no one's roots
	p.rl.mu.Unlock()
	return &sdk.ClientOptions{
		Logger:       p.log,
		Capabilities: caps,
		// The proxy's client never fulfils an upstream's input requests
		// itself: the SDK's automatic multi round-trip (mrtr.go's
		// fulfillInputRequest) would answer roots/list from this client's
		// own list — on the client's behalf — and fail elicitation and
		// sampling. The input-required result goes to the client as
		// written, policed (relay_mrtr.go); the client's retry comes back
		// with its inputResponses and requestState (Proxy.call).
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(ctx context.Context, _ *sdk.ToolListChangedRequest) {
			if err := p.refresh(context.WithoutCancel(ctx)); err != nil {
				p.log.Warn("re-listing the upstream's tools", "err", err)
			}
		},
	}
}

// Client returns the upstream's client: made with ClientOptions, with
// RelayMiddleware installed, and kept so that the Proxy can tell the
// upstream its roots changed. Make one each time the upstream starts.
func (p *Proxy) Client(impl *sdk.Implementation) *sdk.Client {
	c := sdk.NewClient(impl, p.ClientOptions())
	c.AddReceivingMiddleware(p.RelayMiddleware())
	p.rl.mu.Lock()
	p.rl.client = c
	p.rl.mu.Unlock()
	return c
}

// RelayMiddleware is the receiving middleware of the upstream's client
// that relays the upstream's requests — elicitation/create,
// sampling/createMessage, roots/list — to a client of the Proxy
// (ServerSession.Elicit, CreateMessageWithTools, ListRoots) instead of
// answering them itself: elicitation and sampling to the client whose
// call is in progress (else the one heard from last), roots to the
// first connected client that offers them. A URL-mode elicitation goes
// only to an allowed https origin, a sampling request's tools only
// when the caller may call them (RelayOptions); a refusal is the
// upstream's error, one line saying why.
func (p *Proxy) RelayMiddleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch method {
			case "elicitation/create", "sampling/createMessage", "roots/list":
			default:
				return next(ctx, method, req)
			}
			if r, ok := req.(*sdk.ListRootsRequest); ok {
				return p.relayRoots(ctx, r)
			}
			ss := p.downstream()
			if ss == nil {
				return nil, fmt.Errorf("toolgate/mcp: %s from the upstream: no client connected to relay it to", method)
			}
			switch r := req.(type) {
			case *sdk.ElicitRequest:
				if r.Params == nil {
					return nil, fmt.Errorf("toolgate/mcp: %s from the upstream without params", method)
				}
				if err := p.checkElicit(ctx, p.requestOf(ss), r.Params); err != nil {
					return nil, err
				}
				p.log.Info("relaying the upstream's request", "method", method)
				return ss.Elicit(ctx, r.Params)
			case *sdk.CreateMessageWithToolsRequest:
				if r.Params == nil {
					return nil, fmt.Errorf("toolgate/mcp: %s from the upstream without params", method)
				}
				params, err := p.checkSampling(ctx, p.requestOf(ss), r.Params, true)
				if err != nil {
					return nil, err
				}
				p.log.Info("relaying the upstream's request", "method", method)
				//lint:ignore SA1019 the proxy relays sampling to clients on protocols before 2026-07-28, where it is not deprecated
				return ss.CreateMessageWithTools(ctx, params)
			}
			return nil, fmt.Errorf("toolgate/mcp: %s request of type %T", method, req)
		}
	}
}

// downstream is the session an upstream's elicitation or sampling
// request is relayed to: the one whose call started last of those in
// progress, else the one heard from last.
func (p *Proxy) downstream() *sdk.ServerSession {
	p.smu.Lock()
	defer p.smu.Unlock()
	if n := len(p.inflight); n > 0 {
		return p.inflight[n-1]
	}
	return p.last
}

// checkElicit lets a form-mode elicitation through, and a URL-mode one
// when its URL is https and its origin on the allow-list; it logs every
// URL-mode one.
func (p *Proxy) checkElicit(ctx context.Context, who asked, params *sdk.ElicitParams) error {
	if params.Mode == "form" || (params.Mode == "" && params.URL == "" && params.ElicitationID == "") {
		return nil
	}
	if params.Mode != "url" && params.Mode != "" {
		return fmt.Errorf("toolgate/mcp: elicitation/create from the upstream: unknown mode %q (form or url)", params.Mode)
	}
	origin, err := elicitOrigin(params.URL)
	p.rl.mu.Lock()
	allowed := err == nil && p.rl.origins[origin]
	p.rl.mu.Unlock()
	entry := gatelog.Relay{Method: "elicitation/create", Caller: p.callerOf(who), Action: gatelog.RelayRelayed, Origin: origin}
	switch {
	case err != nil:
		err = fmt.Errorf("toolgate/mcp: elicitation/create from the upstream refused: %w", err)
	case !allowed:
		err = fmt.Errorf("toolgate/mcp: elicitation/create from the upstream refused: origin %s is not on the proxy's allow-list (-elicit-url-origin)", origin)
	}
	if err != nil {
		entry.Action, entry.Reason = gatelog.RelayRefused, err.Error()
		p.log.Warn("refusing the upstream's URL elicitation", "origin", origin, "err", err)
	} else {
		p.log.Info("relaying the upstream's URL elicitation", "origin", origin)
	}
	if lerr := p.record(ctx, entry); lerr != nil {
		return lerr
	}
	return err
}

// checkSampling returns the sampling request to relay: as it came when
// it offers no tool the caller may not call; else refused, or without
// those tools (RelayOptions.SamplingTools). A request with tools is
// logged. Without canDrop (a request embedded in a result, relayed as
// written or not at all) it is refused whatever SamplingTools says.
//
//lint:ignore SA1019 the proxy relays sampling to clients on protocols before 2026-07-28, where it is not deprecated
func (p *Proxy) checkSampling(ctx context.Context, who asked, params *sdk.CreateMessageWithToolsParams, canDrop bool) (*sdk.CreateMessageWithToolsParams, error) {
	if len(params.Tools) == 0 {
		return params, nil
	}
	if len(params.Tools) > maxSamplingTools {
		return nil, p.refuseSampling(ctx, who, nil, fmt.Sprintf("it offers the model %d tools, more than %d", len(params.Tools), maxSamplingTools))
	}
	p.rl.mu.Lock()
	may, mode := p.rl.opts.MayCall, p.rl.opts.SamplingTools
	p.rl.mu.Unlock()
	var refused []string
	kept := make([]*sdk.Tool, 0, len(params.Tools))
	for _, t := range params.Tools {
		if t == nil || t.Name == "" {
			return nil, p.refuseSampling(ctx, who, []string{""}, "a tool without a name")
		}
		call := *who.req
		call.Params = &sdk.CallToolParamsRaw{Name: t.Name}
		if may == nil || !may(who.ctx, &call, t.Name) {
			refused = append(refused, t.Name)
			continue
		}
		kept = append(kept, t)
	}
	entry := gatelog.Relay{Method: "sampling/createMessage", Caller: p.callerOf(who), Action: gatelog.RelayRelayed}
	switch {
	case len(refused) == 0:
		p.log.Info("relaying the upstream's sampling request", "tools", len(kept))
		return params, p.record(ctx, entry)
	case mode == SamplingRefuse || !canDrop:
		return nil, p.refuseSampling(ctx, who, refused, "it offers the model tools the caller may not call")
	case len(kept) == 0 && params.ToolChoice != nil && params.ToolChoice.Mode == "required":
		return nil, p.refuseSampling(ctx, who, refused, "it requires a tool and the caller may call none of those offered")
	}
	out := *params
	out.Tools = kept
	entry.Action, entry.Tools = gatelog.RelayDropped, refused
	entry.Reason = "tools the caller may not call"
	p.log.Warn("relaying the upstream's sampling request without tools the caller may not call", "dropped", refused)
	return &out, p.record(ctx, entry)
}

// maxSamplingTools bounds the tools a relayed sampling request may offer
// (each is checked and, refused, named on the log).
const maxSamplingTools = 256

func (p *Proxy) refuseSampling(ctx context.Context, who asked, tools []string, why string) error {
	err := fmt.Errorf("toolgate/mcp: sampling/createMessage from the upstream refused: %s (%q)", why, tools)
	p.log.Warn("refusing the upstream's sampling request", "tools", tools, "err", err)
	if lerr := p.record(ctx, gatelog.Relay{Method: "sampling/createMessage", Caller: p.callerOf(who), Action: gatelog.RelayRefused, Tools: tools, Reason: err.Error()}); lerr != nil {
		return lerr
	}
	return err
}

// record appends e to the log, when there is one.
func (p *Proxy) record(ctx context.Context, e gatelog.Relay) error {
	p.rl.mu.Lock()
	log := p.rl.opts.Log
	p.rl.mu.Unlock()
	if log == nil {
		return nil
	}
	payload, err := encodeRelay(e)
	if err == nil {
		_, err = log.Append(context.WithoutCancel(ctx), gatelog.KindRelay, payload)
	}
	if err != nil {
		return fmt.Errorf("toolgate/mcp: %s from the upstream refused: logging it: %w", e.Method, err)
	}
	return nil
}

// asked is whom an upstream's request is for: a client's call (or a
// call made of its latest request: its session and Extra) and that
// request's context, whose values name its principal.
type asked struct {
	ctx context.Context
	req *sdk.CallToolRequest
}

// requestOf returns whom a request relayed to ss is for: its latest
// request.
func (p *Proxy) requestOf(ss *sdk.ServerSession) asked {
	p.rl.mu.Lock()
	defer p.rl.mu.Unlock()
	if d := p.rl.byss[ss]; d != nil && d.ctx != nil {
		return asked{d.ctx, &sdk.CallToolRequest{Session: ss, Extra: d.extra}}
	}
	return asked{context.Background(), &sdk.CallToolRequest{Session: ss}}
}

// callerOf names who in a log entry.
func (p *Proxy) callerOf(who asked) string {
	p.rl.mu.Lock()
	caller := p.rl.opts.Caller
	p.rl.mu.Unlock()
	if caller == nil {
		if who.req.Session == nil {
			return ""
		}
		return who.req.Session.ID()
	}
	req := *who.req
	if req.Params == nil {
		req.Params = &sdk.CallToolParamsRaw{}
	}
	return caller(who.ctx, &req)
}

// DownstreamMiddleware is the receiving middleware of the Proxy's
// server that tells it which clients are connected and what they offer:
// install it with Server.AddReceivingMiddleware, after the Guard's and
// the Proxy's Middleware (outermost). A client's request that arrives
// while the upstream is started again to be offered roots waits for it
// (at most renewWait). It polices the input requests an upstream puts in
// a tools/call result (relay_mrtr.go).
func (p *Proxy) DownstreamMiddleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			ss, _ := req.GetSession().(*sdk.ServerSession)
			switch method {
			case "notifications/initialized":
				res, err := next(ctx, method, req)
				if ss != nil {
					p.arrive(ctx, ss, req.GetExtra())
				}
				return res, err
			case "notifications/roots/list_changed":
				res, err := next(ctx, method, req)
				if ss != nil {
					p.rootsChanged(ss)
				}
				return res, err
			}
			if renewing := p.heard(ctx, ss, req.GetExtra()); renewing != nil && method != "initialize" && method != "ping" {
				awaitRenew(ctx, renewing)
			}
			res, err := next(ctx, method, req)
			if cr, ok := req.(*sdk.CallToolRequest); ok && err == nil && res != nil {
				res = p.policeInputRequests(ctx, asked{ctx, cr}, res) // relay_mrtr.go
			}
			return res, err
		}
	}
}

// arrive records an initialized client, and when it offers roots has
// the upstream offered them (Renew) or told they changed.
func (p *Proxy) arrive(ctx context.Context, ss *sdk.ServerSession, extra *sdk.RequestExtra) {
	ip := ss.InitializeParams()
	//lint:ignore SA1019 the proxy relays roots to clients on protocols before 2026-07-28, where they are not deprecated
	roots := ip != nil && ip.Capabilities != nil && ip.Capabilities.Roots.ListChanged && ip.ProtocolVersion < MultiRoundTripVersion
	p.rl.mu.Lock()
	renew, notify, added := p.rl.join(&downstream{ss: ss, roots: roots, ctx: ctx, extra: extra})
	p.rl.mu.Unlock()
	if !added {
		return
	}
	go func() {
		_ = ss.Wait()
		p.depart(ss)
	}()
	switch {
	case renew:
		p.log.Info("a client offers roots: starting the upstream again to offer them")
		go p.renew()
	case notify:
		p.notifyRoots("a client offering roots connected")
	}
}

// join records d (mu held). It returns whether the upstream is to be
// started again to be offered roots (the renewal is then under way), or
// told its roots changed, and false for added when d's session is known.
func (r *relay) join(d *downstream) (renew, notify, added bool) {
	if r.byss[d.ss] != nil {
		return false, false, false
	}
	if r.byss == nil {
		r.byss = map[*sdk.ServerSession]*downstream{}
	}
	before := r.rootsClient()
	r.clients = append(r.clients, d)
	r.byss[d.ss] = d
	if !d.roots || r.opts.NoRoots {
		return false, false, true
	}
	if r.arrived != nil {
		close(r.arrived)
		r.arrived = nil
	}
	switch {
	case !r.advertised && r.opts.Renew != nil && r.renewing == nil:
		r.renewing = make(chan struct{})
		return true, false, true
	case r.advertised && before == nil:
		return false, true, true
	}
	return false, false, true
}

// depart forgets a client that left; when it was the one whose roots
// the upstream sees and another offers roots, the upstream is told.
func (p *Proxy) depart(ss *sdk.ServerSession) {
	p.rl.mu.Lock()
	notify := p.rl.leave(ss)
	p.rl.mu.Unlock()
	p.smu.Lock()
	if p.last == ss {
		p.last = nil
	}
	p.smu.Unlock()
	if notify {
		p.notifyRoots("the client whose roots the upstream saw left")
	}
}

// leave forgets ss (mu held); it reports whether the upstream is to be
// told its roots changed: ss was the client whose roots it saw, and
// another offers roots.
func (r *relay) leave(ss *sdk.ServerSession) (notify bool) {
	r.clients = slices.DeleteFunc(r.clients, func(d *downstream) bool { return d.ss == ss })
	delete(r.byss, ss)
	notify = r.advertised && r.owner == ss && r.rootsClient() != nil
	if r.owner == ss {
		r.owner = nil
	}
	return notify
}

// heard records the context of a client's latest request (only its
// values are read: whose principal it is), and returns the channel
// closed when the upstream has been started again, while it is.
func (p *Proxy) heard(ctx context.Context, ss *sdk.ServerSession, extra *sdk.RequestExtra) (renewing chan struct{}) {
	p.rl.mu.Lock()
	defer p.rl.mu.Unlock()
	if d := p.rl.byss[ss]; d != nil {
		d.ctx, d.extra = ctx, extra
	}
	return p.rl.renewing
}

// rootsChanged passes a client's notifications/roots/list_changed on
// to the upstream when the upstream sees that client's roots.
func (p *Proxy) rootsChanged(ss *sdk.ServerSession) {
	p.rl.mu.Lock()
	mine := p.rl.changed(ss)
	p.rl.mu.Unlock()
	if mine {
		p.notifyRoots("the client's roots changed")
	}
}

// changed reports whether a roots/list_changed from ss is the
// upstream's to hear (mu held): it was offered roots and sees ss's.
func (r *relay) changed(ss *sdk.ServerSession) bool {
	d := r.rootsClient()
	return r.advertised && d != nil && d.ss == ss
}

// notifyRoots sends the upstream notifications/roots/list_changed.
func (p *Proxy) notifyRoots(why string) {
	p.rl.mu.Lock()
	c := p.rl.client
	p.rl.mu.Unlock()
	if c == nil {
		p.log.Warn("cannot tell the upstream its roots changed: its client was not made by Proxy.Client", "why", why)
		return
	}
	p.log.Info("telling the upstream its roots changed", "why", why)
	//lint:ignore SA1019 the proxy relays roots to clients on protocols before 2026-07-28, where they are not deprecated
	c.AddRoots(&sdk.Root{URI: rootsSignal}) // sends notifications/roots/list_changed (see rootsSignal)
}

// renew runs RelayOptions.Renew, then lets the waiting requests go on.
func (p *Proxy) renew() {
	p.rl.mu.Lock()
	renew, done := p.rl.opts.Renew, p.rl.renewing
	p.rl.mu.Unlock()
	// The calls in progress on the upstream end first (at most
	// renewDrain): new ones still go to it meanwhile.
	for deadline := time.Now().Add(renewDrain); p.busy() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), renewWait)
	err := renew(ctx)
	cancel()
	p.rl.mu.Lock()
	p.rl.renewing = nil
	p.rl.mu.Unlock()
	close(done)
	if err != nil {
		p.log.Warn("starting the upstream again to offer it roots", "err", err)
	}
}

// awaitRenew waits until done is closed (the upstream was started
// again), at most renewWait, or until ctx ends.
func awaitRenew(ctx context.Context, done chan struct{}) {
	t := time.NewTimer(renewWait)
	defer t.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-t.C:
	}
}

// rootsClient is the first connected client that offers roots; nil when
// none does. Called with mu held.
func (r *relay) rootsClient() *downstream {
	for _, d := range r.clients {
		if d.roots {
			return d
		}
	}
	return nil
}

// relayRoots relays the upstream's roots/list to the client whose roots
// it sees, waiting up to RootsWait for one to connect; never answered
// by the Proxy.
func (p *Proxy) relayRoots(ctx context.Context, req *sdk.ListRootsRequest) (sdk.Result, error) {
	p.rl.mu.Lock()
	advertised, wait := p.rl.advertised, p.rl.opts.RootsWait
	p.rl.mu.Unlock()
	if !advertised {
		return nil, errors.New("toolgate/mcp: roots/list from the upstream: it was not offered roots (no client offering them was connected when it started); the proxy answers roots only from a client")
	}
	if wait == 0 {
		wait = DefaultRootsWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		p.rl.mu.Lock()
		d, arrived := p.rl.asked()
		p.rl.mu.Unlock()
		if d != nil {
			p.log.Info("relaying the upstream's request", "method", "roots/list")
			//lint:ignore SA1019 the proxy relays roots to clients on protocols before 2026-07-28, where they are not deprecated
			return d.ss.ListRoots(ctx, req.Params)
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, fmt.Errorf("toolgate/mcp: roots/list from the upstream: no client offering roots connected: %w", ctx.Err())
		case <-t.C:
			return nil, fmt.Errorf("toolgate/mcp: roots/list from the upstream: no connected client offers roots (waited %s); the proxy answers roots only from a client", wait)
		}
	}
}

// asked returns the client a roots/list goes to, now the one whose
// roots the upstream sees, or when none offers roots the channel closed
// when one arrives (mu held).
func (r *relay) asked() (*downstream, chan struct{}) {
	d := r.rootsClient()
	if d != nil {
		r.owner = d.ss
		return d, nil
	}
	if r.arrived == nil {
		r.arrived = make(chan struct{})
	}
	return nil, r.arrived
}

// encodeRelay is a Relay entry's payload.
func encodeRelay(e gatelog.Relay) ([]byte, error) { return json.Marshal(e) }

// MayCall reports whether the caller of req may call tool at all
// (toolgate.Compiled.MayCall for req's principal): what a relayed
// sampling request's tools are checked with (RelayOptions.MayCall).
func (gd *Guard) MayCall(ctx context.Context, req *sdk.CallToolRequest, tool string) bool {
	return gd.gate.Compiled().MayCall(tool, gd.principal(ctx, req))
}
