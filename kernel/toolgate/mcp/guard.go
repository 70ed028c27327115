package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// MethodCallTool is the MCP method the Guard gates; every other method
// passes through untouched.
const MethodCallTool = "tools/call"

// InputKey names the Guard's elicitation among a result's input requests
// (CallToolResult.InputRequests) and the client's answer among a retried
// call's input responses (CallToolParamsRaw.InputResponses).
const InputKey = "verity.approval"

// MultiRoundTripVersion is the first MCP protocol version whose servers
// may not send requests to the client while serving one (SEP-2322):
// from it on, a Guard asks for an approval by returning an input-required
// result, before it with ServerSession.Elicit. The SDK keeps the constant
// unexported (protocolVersion20260728 in mcp/shared.go).
const MultiRoundTripVersion = "2026-07-28"

// stateKeyLen is the length of a request state key.
const stateKeyLen = 32

// Options configures a Guard. The zero value is ready to use.
type Options struct {
	// Approver is the name the human's answers are recorded under
	// (toolgate.DefaultApprover when empty). It must be one of the
	// approvers Policy.Approvers names for the tiers that need one.
	Approver string
	// Caller returns the caller key of a call; DefaultCaller's rule when
	// nil (see Guard.Caller). Use it when the session id does not name who
	// pays — a stateless HTTP server makes a session per request.
	Caller func(ctx context.Context, req *sdk.CallToolRequest) string
	// Principal returns the principal a call is made for
	// (toolgate.Call.Principal, which the policy's "principals"
	// conditions read); DefaultPrincipal when nil.
	Principal func(ctx context.Context, req *sdk.CallToolRequest) toolgate.Principal
	// StateKey seals the request state of input-required results (at
	// least 32 bytes; an AES-256-GCM key is derived from it:
	// requeststate.go). Several servers behind one load balancer that
	// serve one another's retries need the same key; a random key is made
	// when nil.
	StateKey []byte
	// StateTTL is how long a request state may be echoed back
	// (DefaultStateTTL when zero), never beyond the policy's
	// approval_ttl. A state is accepted once (requeststate.go).
	StateTTL time.Duration
	// Logger receives a record of each decision; none when nil.
	Logger *slog.Logger
	// Hold holds a call whose approval the client's human cannot give —
	// the client cannot elicit, or the request waits for approvers other
	// than Approver — until it is answered elsewhere (an approval inbox
	// answering with Gate.ApproveAs or DenyAs), for at most the gate's
	// ApprovalTimeout, and then decides it again; unanswered, the call is
	// refused (Gate.Unanswered, on the log) and its request still waits.
	// Without Hold, or with no approval timeout, such a call is refused
	// at once.
	Hold bool
	// Inbox is the URL of a page where a waiting request can be answered
	// (an approval inbox); when set, the refusal of a call whose
	// approval its client cannot give names it, so that the agent can
	// tell its human where to go.
	Inbox string
	// Listed, when set, reports whether the server behind the Guard has
	// a tool (Proxy.Listed): a call of a tool it does not have is refused
	// as an IsError result before the gate — never asked of a human,
	// never charged, not on the log.
	Listed func(tool string) bool
	// Pins, when set, are the tool definitions the server's tools are
	// pinned to (a Proxy's: Proxy.SetPins): each call records its tool's
	// pinned hash (toolgate.Call.Definition), and a call of a tool whose
	// listed definition is not pinned is refused before the gate — never
	// asked of a human, never charged, on the log (Pins.Definition).
	Pins *Pins
	// Mux, when set, is the gateway the Guard stands in front of (several
	// servers' tools, namespaced): each call's toolgate.Call.Server is the
	// server its name names, its definition is checked against that
	// server's pins (Mux.PinsOf; Pins is not used), and Listed is
	// Mux.Listed when not set.
	Mux *Mux
	// Listing says what tools/list shows a caller: ListingAuto (the zero
	// value) hides the tools it may never call when the gate refuses
	// unknown tools, and shows the server's list otherwise.
	Listing Listing
	// SyncWhileRunning makes an allowed call's decision durable while the
	// tool runs (toolgate.Gate.BeforeWritten) instead of before it, so
	// that a call waits for one fsync (its result's, which covers the
	// decision) rather than two; a slower tool's decision is made durable
	// 10 ms after the tool started. The result is answered only once both
	// are durable. Off by default. What a crash of the machine may then
	// lose is in toolgate's "Durability: what a crash can lose".
	SyncWhileRunning bool
	// Log, when set, is the log a request refused for breaking the
	// protocol is recorded on (RefuseProtocol: gatelog.KindProtocol) —
	// the gate's. Without it such a request is only logged on Logger.
	Log *trace.Log
}

// Listing is what a Guard does to tools/list.
type Listing int

const (
	// ListingAuto is ListingCallable when the gate refuses unknown
	// tools (Gate.Compiled().Policy().AllowUnknown false), ListingAll
	// otherwise.
	ListingAuto Listing = iota
	// ListingAll passes the server's list on unchanged.
	ListingAll
	// ListingCallable drops from it the tools the caller may never call
	// (Compiled.MayCall false for the call's principal), keeping the others
	// as the server wrote them, in its order.
	ListingCallable
)

// Guard puts a toolgate.Gate in front of an MCP server's tools: its
// Middleware sends every tools/call through the gate. A Guard is safe for
// concurrent use by any number of sessions.
type Guard struct {
	gate      *toolgate.Gate
	approver  string
	caller    func(context.Context, *sdk.CallToolRequest) string
	principal func(context.Context, *sdk.CallToolRequest) toolgate.Principal
	key       []byte
	logger    *slog.Logger
	hold      bool
	inbox     string        // Options.Inbox
	holdFor   time.Duration // the policy's approval timeout: how long a held call waits (hold.go)
	listed    func(string) bool
	pins      *Pins
	mux       *Mux // Options.Mux
	hide      bool
	overlap   bool          // SyncWhileRunning
	stopping  chan struct{} // closed by StopHolding (hold.go)
	stopOnce  sync.Once
	states    *stateSealer // seals and opens the Guard's request states (requeststate.go)
	tasks     taskTable    // the upstream's tasks the Guard follows (tasks.go)

	plog *trace.Log // Options.Log (eras.go)

	mu    sync.Mutex
	conns map[*sdk.ServerSession]string // per-connection keys of sessions without an id
}

// New returns a Guard over g.
func New(g *toolgate.Gate, opts Options) (*Guard, error) {
	if g == nil {
		return nil, errors.New("toolgate/mcp: nil gate")
	}
	gd := &Guard{gate: g, approver: opts.Approver, caller: opts.Caller, principal: opts.Principal, logger: opts.Logger,
		hold: opts.Hold, inbox: opts.Inbox, stopping: make(chan struct{}), listed: opts.Listed, pins: opts.Pins, overlap: opts.SyncWhileRunning, conns: map[*sdk.ServerSession]string{}, plog: opts.Log}
	if gd.mux = opts.Mux; gd.mux != nil && gd.listed == nil {
		gd.listed = gd.mux.Listed
	}
	policy := g.Compiled().Policy()
	gd.holdFor = policy.ApprovalTimeout
	switch opts.Listing {
	case ListingAuto:
		gd.hide = !policy.AllowUnknown
	case ListingAll:
	case ListingCallable:
		gd.hide = true
	default:
		return nil, fmt.Errorf("toolgate/mcp: unknown listing %d", opts.Listing)
	}
	if gd.principal == nil {
		gd.principal = DefaultPrincipal
	}
	if gd.approver == "" {
		gd.approver = toolgate.DefaultApprover
	}
	if gd.logger == nil {
		gd.logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case opts.StateKey == nil:
		gd.key = make([]byte, stateKeyLen)
		_, _ = rand.Read(gd.key) // never fails (crypto/rand)
	case len(opts.StateKey) < stateKeyLen:
		return nil, fmt.Errorf("toolgate/mcp: state key of %d bytes, need at least %d", len(opts.StateKey), stateKeyLen)
	default:
		gd.key = append([]byte(nil), opts.StateKey...)
	}
	gd.tasks.tasks = map[string]*task{}
	var err error
	if gd.states, err = newStateSealer(gd.key, stateTTL(opts.StateTTL, policy.ApprovalTTL)); err != nil {
		return nil, fmt.Errorf("toolgate/mcp: request state key: %w", err)
	}
	return gd, nil
}

// Gate returns the gate the Guard sends calls through.
func (gd *Guard) Gate() *toolgate.Gate { return gd.gate }

// SyncWhileRunning reports whether the Guard runs an allowed call's
// decision fsync beside its tool (Options.SyncWhileRunning).
func (gd *Guard) SyncWhileRunning() bool { return gd.overlap }

// Caller returns the caller key of a call — the toolgate.Call.Caller
// whose kernel session, budget, windows, labels and approvals it is
// charged to: what Options.Caller returns when set; otherwise, for a
// request over HTTP outside any session (Stateless: protocol 2026-07-28),
// its principal's key (Options.Principal, toolgate.Principal.Key), or
// AnonymousCaller without one — never a session or the clientInfo the
// client declares; otherwise the MCP session id (ServerSession.ID(): the
// Mcp-Session-Id of a streamable HTTP session), and for a session
// without one (stdio, in-memory, on either protocol) a key made for the
// connection, "conn:" and a UUIDv7, that lasts as long as it.
func (gd *Guard) Caller(ctx context.Context, req *sdk.CallToolRequest) string {
	if gd.caller != nil {
		return gd.caller(ctx, req)
	}
	if Stateless(req) {
		return gd.statelessCaller(ctx, req)
	}
	return gd.ConnectionKey(req.Session)
}

// DefaultPrincipal is the principal of a call when Options.Principal is
// nil: the one the host put in the request's context with
// toolgate.WithPrincipal, else the bearer token's that the SDK verified
// for the HTTP request (auth.RequireBearerToken puts its TokenInfo in the
// request's context and the streamable transport passes it on as
// CallToolRequest.Extra.TokenInfo: mcp/shared.go's RequestExtra,
// auth/auth.go's TokenInfo{Scopes, Expiration, UserID, Extra}): subject
// TokenInfo.UserID, scopes TokenInfo.Scopes, issuer TokenInfo.Extra["iss"]
// when the verifier put a string there, groups TokenInfo.Extra["groups"]
// when it put a []string there (as the bearer package's Verifier does). A session without a verified
// token (stdio, in-memory, an unauthenticated HTTP server) has the zero
// principal.
func DefaultPrincipal(ctx context.Context, req *sdk.CallToolRequest) toolgate.Principal {
	if p, ok := toolgate.PrincipalFrom(ctx); ok {
		return p
	}
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return toolgate.Principal{}
	}
	ti := req.Extra.TokenInfo
	p := toolgate.Principal{Subject: ti.UserID, Scopes: slices.Clone(ti.Scopes)}
	if iss, ok := ti.Extra["iss"].(string); ok {
		p.Issuer = iss
	}
	if groups, ok := ti.Extra["groups"].([]string); ok {
		p.Groups = slices.Clone(groups)
	}
	return p
}

// ConnectionKey is the default caller key of a session: its id, or for a
// session without one a key the Guard makes on first use and forgets when
// the connection ends.
func (gd *Guard) ConnectionKey(ss *sdk.ServerSession) string {
	if ss == nil {
		return ""
	}
	if id := ss.ID(); id != "" {
		return id
	}
	gd.mu.Lock()
	defer gd.mu.Unlock()
	if k, ok := gd.conns[ss]; ok {
		return k
	}
	k := "conn:" + uuid.Must(uuid.NewV7()).String()
	gd.conns[ss] = k
	go func() {
		_ = ss.Wait()
		gd.mu.Lock()
		delete(gd.conns, ss)
		gd.mu.Unlock()
	}()
	return k
}

// Middleware returns the receiving middleware to install with
// Server.AddReceivingMiddleware(gd.Middleware()):
//
//	func (s *Server) AddReceivingMiddleware(middleware ...Middleware)  // mcp/server.go
//	type Middleware func(MethodHandler) MethodHandler                   // mcp/shared.go
//	type MethodHandler func(ctx context.Context, method string, req Request) (result Result, err error)
//
// It sees every request before the server's handlers. A tools/call (a
// *CallToolRequest, whose Params.Arguments is the json.RawMessage the
// client sent) goes through the gate; every other method passes through.
func (gd *Guard) Middleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if err := gd.checkEra(ctx, method, req); err != nil {
				return nil, err
			}
			if method == MethodListTools && gd.hide {
				return gd.listTools(ctx, method, req, next)
			}
			if method == MethodGetTask || method == MethodUpdateTask || method == MethodCancelTask {
				return gd.taskMethod(ctx, method, req, next)
			}
			if method != MethodCallTool {
				return next(ctx, method, req)
			}
			ctr, ok := req.(*sdk.CallToolRequest)
			if !ok || ctr.Params == nil {
				// Fail closed: a call the gate cannot read does not run.
				return nil, fmt.Errorf("toolgate/mcp: %s request of type %T", method, req)
			}
			return gd.callTool(ctx, ctr, func(ctx context.Context, r *sdk.CallToolRequest) (sdk.Result, error) {
				return next(ctx, method, r)
			})
		}
	}
}

type runFunc func(context.Context, *sdk.CallToolRequest) (sdk.Result, error)

// growStack grows the calling goroutine's stack, at once, to hold 16 KiB
// more than it does. The SDK runs each request on a new goroutine, whose
// stack starts at 8 KiB, and a decision (Gate.Before down to the kernel's
// evaluation and the log's append) needs about 18 KiB: the runtime would
// grow the stack twice, each time copying it and adjusting every frame,
// the second time some thirty frames deep — a quarter of the gate's CPU
// per call (BenchmarkGuardCall). Called at the top of a call, while the
// stack is shallow, it makes one cheap copy instead (as CockroachDB's
// growstack package does). i is any index: it keeps the buffer from being
// optimised away.
//
//go:noinline
func growStack(i int) byte {
	var buf [16 << 10]byte
	return buf[i&(len(buf)-1)]
}

// callTool is the gate's path for one tools/call.
func (gd *Guard) callTool(ctx context.Context, req *sdk.CallToolRequest, run runFunc) (sdk.Result, error) {
	growStack(0)
	p := req.Params
	ctx, traceID := withTraceOf(ctx, p.Meta) // eras.go: the agent's traceparent
	call := toolgate.Call{Tool: p.Name, Arguments: []byte(p.Arguments), Caller: gd.Caller(ctx, req), Principal: gd.principal(ctx, req),
		Conversation: conversationOf(p.Meta), Trace: traceID}
	log := gd.logger.With("tool", p.Name, "caller", call.Caller)
	if traceID != "" {
		log = log.With("trace", traceID)
	}
	pins := gd.pins
	if gd.mux != nil {
		call.Server, _, _ = gd.mux.Split(p.Name)
		pins = gd.mux.PinsOf(call.Server)
	}
	if gd.listed != nil && !gd.listed(p.Name) {
		// Recorded on the gate's log, as every call is; the gate's rules
		// never see it.
		log.Info("refused: not a tool of the server")
		if _, err := gd.gate.RefuseNoSuchTool(context.WithoutCancel(ctx), call); err != nil {
			log.Error("recording the refusal", "err", err)
		}
		if gd.mux != nil {
			return refusal(gd.mux.refusalOf(p.Name)), nil
		}
		return refusal(fmt.Sprintf("tool %q refused: the server has no such tool", p.Name)), nil
	}
	if pins != nil {
		def, err := pins.Definition(ctx, call)
		if err != nil {
			return refusal(err.Error()), nil
		}
		call.Definition, call.HintedTier = def, pins.HintedTier(def)
	}

	// A retry of a call that waited for the human (SEP-2322): the gate's
	// Resume takes the human's answer for the request the state names,
	// only for exactly the call it asked about.
	if isVerityState(p.RequestState) {
		return gd.retried(ctx, req, call, run, log)
	}
	req = withoutVerityInput(req) // the Guard's answers are never forwarded

	var d toolgate.Decision
	var durable func() error // SyncWhileRunning: the allowed decision's fsync
	var err error
	if gd.overlap {
		d, durable, err = gd.gate.BeforeWritten(ctx, call)
	} else {
		d, err = gd.gate.Before(ctx, call)
	}
	if err != nil {
		log.Error("no decision", "err", err)
		return refusal(fmt.Sprintf("tool %q refused: the gate could not decide: %v", p.Name, err)), nil
	}
	if d.Verdict == toolgate.AskApproval {
		return gd.ask(ctx, req, d, run, log)
	}
	if d.Verdict == toolgate.Allow && durable != nil {
		return gd.runSyncing(ctx, req, d, durable, run, log)
	}
	return gd.decided(ctx, req, d, run, log)
}

// decisionSyncAfter is how long a SyncWhileRunning call's decision waits
// for its tool before it is made durable on its own: a tool that ends
// sooner has its decision made durable by its result's fsync (one fsync
// for the call), a slower one gets the decision's fsync then.
var decisionSyncAfter = 10 * time.Millisecond

// runSyncing runs an allowed call whose decision is written but not yet
// durable. The decision becomes durable beside the tool: with the
// result's fsync, which covers every record written before it, when the
// call has ended within decisionSyncAfter (or with any other call's fsync
// meanwhile); else by an fsync of its own started then. The result
// reaches the client only once the decision is durable (and After has
// made the result so).
func (gd *Guard) runSyncing(ctx context.Context, req *sdk.CallToolRequest, d toolgate.Decision, durable func() error, run runFunc, log *slog.Logger) (sdk.Result, error) {
	synced := make(chan error, 1)
	ended := make(chan struct{})
	after := decisionSyncAfter
	go func() {
		t := time.NewTimer(after)
		select {
		case <-ended:
		case <-t.C:
		}
		t.Stop()
		synced <- durable()
	}()
	res, err := gd.run(ctx, req, d, run, log)
	close(ended)
	if serr := <-synced; serr != nil {
		log.Error("the decision is not durable", "call", d.Call.ID, "err", serr)
		return refusal(fmt.Sprintf("tool %q ran, but the gate could not record its decision: %v", d.Call.Tool, serr)), nil
	}
	return res, err
}

// decided acts on an Allow or Refuse.
func (gd *Guard) decided(ctx context.Context, req *sdk.CallToolRequest, d toolgate.Decision, run runFunc, log *slog.Logger) (sdk.Result, error) {
	switch d.Verdict {
	case toolgate.Allow:
		return gd.run(ctx, req, d, run, log)
	case toolgate.Refuse:
		log.Info("refused", "call", d.Call.ID, "seq", d.Seq, "why", d.Explanation)
		return refusal(d.Explanation), nil
	}
	// AskApproval again right after an answer: the answer did not settle
	// it (another approver, or an answer to a request already decided).
	return refusal(fmt.Sprintf("tool %q: %s (awaiting %s)", d.Call.Tool, d.Explanation, strings.Join(d.Approval.Awaiting, ", "))), nil
}

// run runs an allowed call and reports how it ended to the gate: within
// its rule's timeout (Compiled.RuleOf), a call that timed out failed; a
// call that never reached the upstream (a Proxy says so) is settled at
// nothing; a reserved call whose rule has cost_from is settled at the
// figure its result reports, at its reservation when the figure is
// missing or invalid (unmeasured).
func (gd *Guard) run(ctx context.Context, req *sdk.CallToolRequest, d toolgate.Decision, run runFunc, log *slog.Logger) (sdk.Result, error) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	rule, _ := gd.gate.Compiled().RuleOf(d.Rule)
	timeout := rule.Timeout
	if gd.mux != nil {
		timeout = gd.mux.timeoutOf(d.Call.Server, gd.gate.Compiled(), d.Rule, timeout) // a server's call_timeout
	}
	if timeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, timeout)
	}
	dl := &delivery{}
	res, err := run(withDelivery(rctx, dl), req)
	if why := upstreamMixes(res); why != "" && err == nil {
		log.Warn("the upstream's result refused", "call", d.Call.ID, "why", why)
		res = refusal(fmt.Sprintf("tool %q: the server's result is refused: %s", d.Call.Tool, why))
	}
	// Timed out: the deadline passed, the client's context did not end,
	// and no answer came (an error, or the Proxy's error result).
	timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil && !answered(res, err)
	cancel()
	if timedOut {
		log.Warn("timed out", "call", d.Call.ID, "timeout", timeout)
		res, err = refusal(fmt.Sprintf("tool %q timed out after %s", d.Call.Tool, timeout)), nil
	}
	if id, expires, ok := taskCreated(res); ok && err == nil && !timedOut {
		return gd.startTask(ctx, req, d, rule, res, id, expires, log) // tasks.go: settled when the task ends
	}
	out, failure := outcome(res, err)
	r := toolgate.Result{Output: out, Err: failure}
	measure := "fixed"
	switch {
	case dl.unreached():
		// Never reached the upstream: it costs nothing.
		r.Measured, r.Actual, measure = true, 0, "unreached"
	case d.Reserved && rule.CostFrom != "" && failure == nil:
		r.Actual, measure = measured(rule.CostFrom, res)
		r.Measured = measure == "measured"
	case d.Reserved:
		measure = "unmeasured"
	}
	o, aerr := gd.gate.After(context.WithoutCancel(ctx), d.Call, r)
	switch {
	case aerr == nil:
	case errors.Is(aerr, kernel.ErrOverrun):
		log.Warn("overrun", "call", d.Call.ID, "unpaid", o.Unpaid)
	case errors.Is(aerr, trace.ErrBroken):
		// The log could not make the result durable: the client is not
		// told of a result the log may not hold.
		log.Error("the result is not durable", "call", d.Call.ID, "err", aerr)
		return refusal(fmt.Sprintf("tool %q ran, but the gate could not record its result: %v", d.Call.Tool, aerr)), nil
	default:
		// The tool ran; its result stands. The log misses its outcome.
		log.Error("recording the result", "call", d.Call.ID, "err", aerr)
	}
	log.Info("ran", "call", d.Call.ID, "exec", d.ExecID, "ok", failure == nil, "charged", o.Charged, "cost", measure, "approval", d.ApprovalID)
	return res, err
}

// answered reports whether run returned the tool's own result.
func answered(res sdk.Result, err error) bool {
	if err != nil || res == nil {
		return false
	}
	if r, ok := res.(*sdk.CallToolResult); ok && r.IsError {
		return false
	}
	return true
}

// measured reads a result's cost at the cost_from pointer: "measured"
// and the figure, or "unmeasured" when it is missing or invalid.
func measured(pointer string, res sdk.Result) (kernel.Cost, string) {
	p, err := toolgate.ParseCostPointer(pointer)
	if err != nil {
		return 0, "unmeasured"
	}
	raw, err := resultJSON(res)
	if err != nil {
		return 0, "unmeasured"
	}
	c, err := p.Measure(raw)
	if err != nil {
		return 0, "unmeasured"
	}
	return c, "measured"
}

// resultJSON is a tool result as JSON: a RawResult's as received.
func resultJSON(res sdk.Result) ([]byte, error) {
	if r, ok := res.(*RawResult); ok {
		return r.JSON, nil
	}
	return json.Marshal(res)
}

// listTools passes on the server's tools/list without the tools the
// caller may never call. The caller's principal is read as for a call
// (Options.Principal) from a call request of the same session and
// extra.
func (gd *Guard) listTools(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	lr, ok := req.(*sdk.ListToolsRequest)
	if !ok {
		return nil, fmt.Errorf("toolgate/mcp: %s request of type %T", method, req)
	}
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	p := gd.principal(ctx, &sdk.CallToolRequest{Session: lr.Session, Extra: lr.Extra, Params: &sdk.CallToolParamsRaw{}})
	compiled := gd.gate.Compiled()
	may := func(tool string) bool { return compiled.MayCall(tool, p) }
	switch r := res.(type) {
	case *sdk.ListToolsResult:
		out := *r
		out.Tools = slices.DeleteFunc(slices.Clone(r.Tools), func(t *sdk.Tool) bool { return t == nil || !may(t.Name) })
		out.CacheScope = CacheScopePrivate // filtered for this caller (caching.go)
		return &out, nil
	case *RawResult:
		raw, err := filterTools(r.JSON, may)
		if err == nil {
			raw, err = privateScope(raw) // filtered for this caller (caching.go)
		}
		if err != nil {
			return nil, err
		}
		return &RawResult{JSON: raw}, nil
	}
	return nil, fmt.Errorf("toolgate/mcp: %s result of type %T", method, res)
}

// ask puts an AskApproval to the client's human: an input-required result
// on MultiRoundTripVersion and later, ServerSession.Elicit before. A
// request that no longer awaits the Guard's approver (the human answered
// already, and other approvers have not) is not asked: the call is
// refused, and the request stays pending for the others.
func (gd *Guard) ask(ctx context.Context, req *sdk.CallToolRequest, d toolgate.Decision, run runFunc, log *slog.Logger) (sdk.Result, error) {
	ap := d.Approval
	if gd.holds(req, d) {
		return gd.held(ctx, req, d, run, log)
	}
	if !gd.answers(d.Call, ap) {
		log.Info("awaiting other approvers", "call", d.Call.ID, "approval", ap.ID, "awaiting", ap.Awaiting)
		return refusal(fmt.Sprintf("tool %q: awaiting approval from %s", ap.Tool, strings.Join(ap.Awaiting, ", ")) + gd.inboxHint()), nil
	}
	if !canElicit(req.ClientCapabilities()) {
		log.Info("approval impossible", "call", d.Call.ID, "approval", ap.ID)
		return refusal(fmt.Sprintf("tool %q needs a human's approval (%s) and this client cannot ask for one: it does not support form elicitation",
			ap.Tool, ap.Tier) + gd.inboxHint()), nil
	}
	params := approvalQuestion(ap)
	if multiRoundTrip(req.ProtocolVersion()) {
		state, err := gd.states.seal(newSealedState(d.Call, ap.ID, time.Now().Add(gd.states.ttl)))
		if err != nil {
			// Never issue a state every retry would be refused for; the
			// request stays pending (a host may approve it out of band).
			log.Error("no request state", "call", d.Call.ID, "approval", ap.ID, "err", err)
			return refusal(fmt.Sprintf("tool %q needs a human's approval (%s) and cannot ask for it: %v", ap.Tool, ap.Tier, err)), nil
		}
		log.Info("asking", "call", d.Call.ID, "approval", ap.ID, "via", "input_required")
		return inputRequired(sdk.InputRequestMap{InputKey: params}, state)
	}

	log.Info("asking", "call", d.Call.ID, "approval", ap.ID, "via", "elicitation/create")
	answer, eerr := req.Session.Elicit(ctx, params)
	return gd.settle(ctx, req, d.Call, ap.ID, answer, eerr, run, log)
}

// answers reports whether the human of call's session can answer ap: the
// session's authenticated principal, by its key or a group of its, or,
// for a session without one, Options.Approver.
func (gd *Guard) answers(call toolgate.Call, ap *toolgate.ApprovalRequest) bool {
	p := call.Principal
	key := p.Key()
	if key == "" {
		return slices.Contains(ap.Awaiting, gd.approver)
	}
	for _, name := range ap.Awaiting {
		if group, ok := strings.CutPrefix(name, toolgate.GroupPrefix); (ok && slices.Contains(p.Groups, group)) || name == key {
			return true
		}
	}
	return false
}

// answerOf is the human's answer as the gate records it: accept approves;
// decline, cancel, no answer or a failed elicitation deny. The human who
// answers an elicitation is the session's user, so a session with an
// authenticated principal answers as that principal (toolgate.Answer.By:
// recorded as Gate.ApproveAs records it, and refused when it is the
// principal of the PRIVILEGE call it approves); one without answers
// under Options.Approver. It returns the action for the log too.
func (gd *Guard) answerOf(call toolgate.Call, answer *sdk.ElicitResult, askErr error) (*toolgate.Answer, string) {
	a := &toolgate.Answer{Approver: gd.approver}
	if call.Principal.Key() != "" {
		p := call.Principal
		a.By = &p
	}
	if answer != nil {
		if r, ok := answer.Content["reason"].(string); ok {
			a.Reason = r
		}
	}
	action := "none"
	switch {
	case askErr != nil:
		action = "failed"
		a.Reason = "the approval could not be asked: " + askErr.Error()
	case answer == nil:
		a.Reason = "no answer"
	case answer.Action == "accept":
		action = "accept"
		a.Approved = true
	case answer.Action == "decline" || answer.Action == "cancel":
		action = answer.Action
		if a.Reason == "" {
			a.Reason = map[string]string{"decline": "declined", "cancel": "cancelled"}[answer.Action]
		}
	default:
		action = "unrecognised"
		a.Reason = fmt.Sprintf("unrecognised answer %q", answer.Action)
	}
	return a, action
}

// settle hands the human's answer to the approval request id, with the
// call it was asked about, to the gate's Resume, and acts on the
// decision: the call runs on an approval, is refused on a denial, and
// waits (refused here) when other approvers are still awaited.
//
// An answer the gate refuses (gatelog.ConditionAnswer, recorded on the
// log) runs nothing and makes no request: one that comes late — the
// request was decided already (another answer to it, for an identical
// call asked at the same time, got there first, or its approval was
// used: a replayed retry), or the human already answered it and it waits
// on others — and one the human may not give (not an approver, or a
// PRIVILEGE call's own principal). It is logged as a warning; a late
// denial's call is refused as denied, so that it never runs on the other
// answer's approval.
func (gd *Guard) settle(ctx context.Context, req *sdk.CallToolRequest, call toolgate.Call, id string, answer *sdk.ElicitResult, askErr error,
	run runFunc, log *slog.Logger) (sdk.Result, error) {
	a, action := gd.answerOf(call, answer, askErr)
	// The human answered: record it even when the request is cancelled.
	d, err := gd.gate.Resume(context.WithoutCancel(ctx), call, id, a)
	if err != nil {
		log.Error("recording the answer", "err", err)
		return refusal(fmt.Sprintf("tool %q refused: %v", call.Tool, err)), nil
	}
	who := a.Approver
	if a.By != nil {
		who = a.By.Key()
	}
	switch {
	case d.Verdict == toolgate.Refuse && d.Condition == gatelog.ConditionAnswer:
		log.Warn("answer refused: not recorded", "approval", id, "approver", who,
			"answer", action, "why", d.Explanation, "seq", d.Seq)
		if !a.Approved {
			return refusal(fmt.Sprintf("tool %q denied by %s: %s (after another answer to the same request)",
				call.Tool, who, toolgate.OneLine(a.Reason))), nil
		}
		return refusal(d.Explanation), nil
	case d.Verdict == toolgate.AskApproval:
		return refusal(fmt.Sprintf("tool %q: approved here, still awaiting %s", call.Tool, strings.Join(d.Approval.Awaiting, ", "))), nil
	}
	return gd.decided(ctx, req, d, run, log)
}

// approvalQuestion is the elicitation put to the human: the gate's
// question, and an optional reason recorded with the answer.
func approvalQuestion(ap *toolgate.ApprovalRequest) *sdk.ElicitParams {
	return &sdk.ElicitParams{
		Mode:    "form",
		Message: ap.Question,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"reason": map[string]any{"type": "string", "title": "Reason",
					"description": "Why you approve or decline (optional; recorded with your answer)."},
			},
		},
	}
}

// canElicit reports whether a client advertised form elicitation: an
// "elicitation" capability with "form", or with neither mode (before
// protocol 2025-11-25 an empty object meant form).
func canElicit(c *sdk.ClientCapabilities) bool {
	if c == nil || c.Elicitation == nil {
		return false
	}
	return c.Elicitation.Form != nil || c.Elicitation.URL == nil
}

// multiRoundTrip reports whether a request's protocol version asks for
// input through input-required results. An unknown version counts as the
// SDK's latest, as the SDK's own check does (clientSupportsMultiRoundTrip
// in mcp/mrtr.go).
func multiRoundTrip(version string) bool {
	return version == "" || version >= MultiRoundTripVersion
}

// inputRequired returns an input-required CallToolResult. The result type
// is unexported in the SDK (CallToolResult.resultType) and set by the
// server only for results a tool handler returns (Server.callTool), which
// a receiving middleware wraps from outside; CallToolResult.UnmarshalJSON
// is the exported way to set it.
func inputRequired(reqs sdk.InputRequestMap, state string) (*sdk.CallToolResult, error) {
	wire, err := json.Marshal(struct {
		InputRequests sdk.InputRequestMap `json:"inputRequests"`
		RequestState  string              `json:"requestState"`
		ResultType    string              `json:"resultType"`
	}{reqs, state, "input_required"})
	if err != nil {
		return nil, err
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(wire, &res); err != nil {
		return nil, err
	}
	res.Content = nil // content and input requests are exclusive
	return &res, nil
}

// withoutApprovalInput returns req without the Guard's input response and
// request state, so that the tool sees the call as the client first sent
// it.
func withoutApprovalInput(req *sdk.CallToolRequest) *sdk.CallToolRequest {
	p := *req.Params
	p.RequestState = ""
	p.InputResponses = nil
	for k, v := range req.Params.InputResponses {
		if k == InputKey {
			continue
		}
		if p.InputResponses == nil {
			p.InputResponses = sdk.InputResponseMap{}
		}
		p.InputResponses[k] = v
	}
	r := *req
	r.Params = &p
	return &r
}

// refusal is the tool result a refused call returns: the model reads the
// gate's explanation as the tool's error.
func refusal(explanation string) *sdk.CallToolResult {
	return completeResult(explanation)
}

// outcome returns what the gate records of a finished call: the result's
// text (its JSON when it holds anything but text) and its failure — the
// handler's error, or the result's text when IsError is set.
func outcome(res sdk.Result, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if raw, ok := res.(*RawResult); ok {
		if text, isError, ok := plainText(raw.JSON); ok {
			if isError {
				return []byte(text), errors.New(text)
			}
			return []byte(text), nil
		}
		var decoded sdk.CallToolResult
		if derr := json.Unmarshal(raw.JSON, &decoded); derr != nil {
			return raw.JSON, fmt.Errorf("toolgate/mcp: the tool's result does not decode: %w", derr)
		}
		res = &decoded
	}
	r, ok := res.(*sdk.CallToolResult)
	if !ok || r == nil {
		return nil, fmt.Errorf("toolgate/mcp: tools/call returned %T", res)
	}
	out, ok := resultText(r)
	if !ok {
		b, merr := json.Marshal(r)
		if merr != nil {
			return nil, merr
		}
		out = string(b)
	}
	if r.IsError {
		return []byte(out), errors.New(out)
	}
	return []byte(out), nil
}

// plainText reads the result JSON of the common case — an object of at
// most "content", an array of text contents, each exactly
// {"type":"text","text":…}, and "isError", a boolean — as outcome would
// through the SDK's CallToolResult: its texts joined by newlines, and
// whether it is an error. It reads in one pass with canon's strict
// Scanner; anything else (another member or type, a member named in
// another case or with an escape, a duplicate, a lone surrogate, invalid
// UTF-8) reports false, and outcome decodes the result through the SDK.
// It exists because the SDK's decoder allocates a 32 KiB buffer for each
// value it reads, most of the garbage a forwarded call makes
// (FuzzPlainTextAgrees holds the two readings equal).
func plainText(raw []byte) (text string, isError, ok bool) {
	var sc canon.Scanner
	sc.Reset(raw, 0, 0)
	if sc.Peek() != '{' {
		return "", false, false
	}
	empty, err := sc.Open()
	if err != nil {
		return "", false, false
	}
	var b strings.Builder
	var seenContent, seenError bool
	for more := !empty; more; {
		key, _, escaped, err := sc.Key()
		if err != nil || escaped {
			return "", false, false
		}
		switch string(key) {
		case "content":
			if seenContent || !textContents(&sc, &b) {
				return "", false, false
			}
			seenContent = true
		case "isError":
			if seenError {
				return "", false, false
			}
			seenError = true
			switch sc.Peek() {
			case 't':
				isError, err = true, sc.ReadLiteral("true")
			case 'f':
				err = sc.ReadLiteral("false")
			default:
				return "", false, false
			}
			if err != nil {
				return "", false, false
			}
		default:
			return "", false, false
		}
		if more, err = sc.Next('}'); err != nil {
			return "", false, false
		}
	}
	if sc.Finish() != nil {
		return "", false, false
	}
	return b.String(), isError, true
}

// textContents reads a content array of text contents, each exactly
// {"type":"text","text":…}, appending their texts to b, one per line.
func textContents(sc *canon.Scanner, b *strings.Builder) bool {
	if sc.Peek() != '[' {
		return false
	}
	empty, err := sc.Open()
	if err != nil {
		return false
	}
	for i, more := 0, !empty; more; i++ {
		if sc.Peek() != '{' {
			return false
		}
		if empty, err := sc.Open(); err != nil || empty {
			return false
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		var typed, texted bool
		for inner := true; inner; {
			key, _, escaped, err := sc.Key()
			if err != nil || escaped || sc.Peek() != '"' {
				return false
			}
			switch string(key) {
			case "type":
				v, escaped, err := sc.ReadString()
				if typed || err != nil || escaped || string(v) != "text" {
					return false
				}
				typed = true
			case "text":
				v, _, err := sc.ReadString()
				if texted || err != nil {
					return false
				}
				b.Write(v)
				texted = true
			default:
				return false
			}
			if inner, err = sc.Next('}'); err != nil {
				return false
			}
		}
		if !typed || !texted {
			return false
		}
		if more, err = sc.Next(']'); err != nil {
			return false
		}
	}
	return true
}

// resultText joins a result's text contents, and reports false when it
// holds anything else.
func resultText(r *sdk.CallToolResult) (string, bool) {
	if r.StructuredContent != nil || r.InputRequests != nil {
		return "", false
	}
	var b strings.Builder
	for i, c := range r.Content {
		t, ok := c.(*sdk.TextContent)
		if !ok {
			return "", false
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t.Text)
	}
	return b.String(), true
}

// ConversationMetaKey is the member of a tools/call request's _meta that
// names the conversation the call belongs to (toolgate.Call.Conversation),
// read by a policy with "conversation_labels": a string the client sets
// and a model cannot (it is not among the tool's arguments).
const ConversationMetaKey = "io.github.verity-go/conversation"

// conversationOf is the conversation handle of a request's _meta, "" when
// it names none or names it with anything but a string.
func conversationOf(meta sdk.Meta) string {
	s, _ := meta[ConversationMetaKey].(string)
	return s
}
