package toolgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

// The trace entry kinds the gate appends besides the kernel's and claims'.
const (
	// KindRefuse records a call refused before the kernel saw it: an
	// unknown tool, a cost that could not be computed, a call id already
	// open, or a human's denial.
	KindRefuse = "toolgate.refuse"
	// KindResult records how an allowed call ended.
	KindResult = "toolgate.result"
)

// SessionPrefix starts every kernel session id the gate makes: the
// caller "alice" has the session "toolgate:alice".
const SessionPrefix = "toolgate:"

var (
	// ErrUnknownCall: After was given a call that is not open — never
	// allowed, already finished, or allowed before a restart.
	ErrUnknownCall = errors.New("toolgate: no open call with this id")
	// ErrUnknownApproval: Approve or Deny was given an id that names no
	// waiting request.
	ErrUnknownApproval = errors.New("toolgate: no approval request with this id")
	// ErrInvalidResult: After was given a Result it cannot record (a
	// negative measured cost); the call stays open.
	ErrInvalidResult = errors.New("toolgate: invalid result")
	// ErrInvalidConfig: New was given a Config it cannot run.
	ErrInvalidConfig = errors.New("toolgate: invalid config")
)

// Gate puts the kernel between an agent and its tools. Before decides each
// call, After settles and records it, Approve and Deny take a human's
// answer; every decision is on the trace log before it is returned.
// A Gate is safe for concurrent use.
type Gate struct {
	log     *trace.Log
	cfg     Config
	k       *kernel.Kernel
	claims  *claims.Session
	clock   func() time.Time
	newID   func() string
	shared  kernel.SharedBudget
	resumed map[string]bool // kernel sessions already on the log

	mu        sync.Mutex
	callers   map[string]*caller
	approvals map[string]*approval // waiting requests by id
}

// caller is one caller's kernel session and the calls and approvals in
// flight for it.
type caller struct {
	ready chan struct{} // closed once sess or err is set
	sess  *kernel.Session
	err   error

	mu      sync.Mutex
	open    map[string]openCall   // by call id
	granted map[callKey][]string  // approval ids not yet used
	denied  map[callKey][]denial  // denials not yet reported
	waiting map[callKey]*approval // the request a call waits on
}

// callKey is what an approval is bound to, besides the caller.
type callKey struct{ tool, digest string }

type openCall struct {
	execID   string
	tool     string
	rule     Rule
	cost     kernel.Cost
	reserved bool
}

type denial struct{ id, approver, reason string }

type approval struct {
	req    ApprovalRequest
	key    callKey
	bundle claims.ClaimBundle // as its last evaluation returned it
	seq    uint64             // the claims evaluation that made the request
}

// Option configures a Gate.
type Option func(*options)

type options struct {
	clock   func() time.Time
	newID   func() string
	shared  kernel.SharedBudget
	windows RateWindows
}

// WithClock sets the clock every record is stamped with (default
// time.Now).
func WithClock(clock func() time.Time) Option { return func(o *options) { o.clock = clock } }

// WithIDs sets the generator of call, execution and approval ids (default
// UUIDv7).
func WithIDs(newID func() string) Option { return func(o *options) { o.newID = newID } }

// WithSharedBudget puts every caller's session under one budget held
// outside the process (kernel/sqlbudget): a fleet of gates on many
// machines then never spends more than it, together.
func WithSharedBudget(sb kernel.SharedBudget) Option {
	return func(o *options) { o.shared = sb }
}

// New returns a Gate recording on log. The kernel is built from cfg
// (Budget, MinCost, Invariants); a caller whose session is already on the
// log (the gate restarted over a durable log) resumes it through
// kernel.Replay, with its budget spent as recorded.
func New(ctx context.Context, log *trace.Log, cfg Config, opts ...Option) (*Gate, error) {
	if log == nil {
		return nil, fmt.Errorf("%w: no trace log", ErrInvalidConfig)
	}
	o := options{clock: time.Now, newID: func() string { return uuid.Must(uuid.NewV7()).String() }}
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.clone()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	k, err := kernel.New(kernel.Config{Budget: cfg.Budget, MinActionCost: cfg.MinCost, Invariants: cfg.Invariants})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	policy := claims.DefaultPolicy()
	policy.Approvers = cfg.Approvers
	cs, err := claims.NewSession(ctx, log, policy, claims.WithClock(o.clock), claims.WithIDs(o.newID))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	g := &Gate{log: log, cfg: cfg, k: k, claims: cs, clock: o.clock, newID: o.newID, shared: o.shared,
		resumed: map[string]bool{}, callers: map[string]*caller{}, approvals: map[string]*approval{}}
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return nil, fmt.Errorf("toolgate: reading the log: %w", err)
		}
		if e.Kind != kernel.KindStart {
			continue
		}
		d, err := kernel.DecodeEntry(e)
		if err != nil {
			return nil, fmt.Errorf("toolgate: reading the log: %w", err)
		}
		if s, ok := d.(kernel.StartEntry); ok && strings.HasPrefix(s.Session, SessionPrefix) {
			g.resumed[s.Session] = true
		}
	}
	return g, nil
}

// clone copies what a Config shares with its caller.
func (c Config) clone() Config {
	c.Rules = slices.Clone(c.Rules)
	for i := range c.Rules {
		c.Rules[i].Tier = tierOrDefault(c.Rules[i].Tier)
	}
	c.DefaultRule.Tier = tierOrDefault(c.DefaultRule.Tier)
	c.Invariants = slices.Clone(c.Invariants)
	if c.Approvers == nil {
		c.Approvers = map[claims.RiskTier][]string{
			claims.TierDelete:    {DefaultApprover},
			claims.TierPrivilege: {DefaultApprover},
		}
	} else {
		m := make(map[claims.RiskTier][]string, len(c.Approvers))
		for t, names := range c.Approvers {
			m[t] = slices.Clone(names)
		}
		c.Approvers = m
	}
	if c.MaxWaiting == 0 {
		c.MaxWaiting = DefaultMaxWaiting
	}
	if c.ResultTextLimit == 0 {
		c.ResultTextLimit = DefaultResultTextLimit
	}
	return c
}

// validate reports every problem of a Config at once.
func (c Config) validate() error {
	var errs []error
	rules := c.Rules
	if c.AllowUnknown {
		rules = append(slices.Clone(rules), c.DefaultRule)
	}
	for i, r := range rules {
		name := fmt.Sprintf("rule %d (%q)", i, r.Match)
		if i == len(c.Rules) {
			name = "the default rule"
		} else if _, err := path.Match(r.Match, ""); err != nil || r.Match == "" {
			errs = append(errs, fmt.Errorf("%s: not a tool name or path.Match pattern", name))
		}
		if !r.Tier.Valid() {
			errs = append(errs, fmt.Errorf("%s: unknown risk tier %q", name, r.Tier))
		}
		if r.CostFunc == nil && r.Cost < c.MinCost {
			errs = append(errs, fmt.Errorf("%s: cost %s is below the minimum cost %s", name, r.Cost, c.MinCost))
		}
		if r.needsApproval() && len(c.Approvers[r.Tier]) == 0 {
			errs = append(errs, fmt.Errorf("%s: tier %s needs approvers and Config.Approvers names none", name, r.Tier))
		}
	}
	if c.MinCost <= 0 {
		errs = append(errs, fmt.Errorf("minimum cost %s must be positive", c.MinCost))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Kernel returns the kernel every caller's session runs: what
// kernel.Replay needs to rebuild one from the log.
func (g *Gate) Kernel() *kernel.Kernel { return g.k }

// SessionID returns the kernel session id of caller's calls.
func (g *Gate) SessionID(caller string) string { return SessionPrefix + caller }

// Meter returns caller's budget and step counters, and false when the
// caller has made no call yet.
func (g *Gate) Meter(caller string) (kernel.Meter, bool) {
	g.mu.Lock()
	c, ok := g.callers[caller]
	g.mu.Unlock()
	if !ok {
		return kernel.Meter{}, false
	}
	<-c.ready
	if c.sess == nil {
		return kernel.Meter{}, false
	}
	return c.sess.Meter(), true
}

// caller returns the caller's session, starting or resuming it on first
// use. Concurrent first calls of one caller wait for one start.
func (g *Gate) caller(ctx context.Context, key string) (*caller, error) {
	g.mu.Lock()
	c, ok := g.callers[key]
	if !ok {
		c = &caller{ready: make(chan struct{}), open: map[string]openCall{}, granted: map[callKey][]string{},
			denied: map[callKey][]denial{}, waiting: map[callKey]*approval{}}
		g.callers[key] = c
	}
	g.mu.Unlock()
	if ok {
		select {
		case <-c.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err != nil {
			return nil, c.err
		}
		return c, nil
	}
	// Other calls of this caller wait on this start: one call's
	// cancellation must not fail theirs.
	c.sess, c.err = g.startSession(context.WithoutCancel(ctx), key)
	if c.err != nil {
		// Forget the failure so that a later call tries again.
		g.mu.Lock()
		delete(g.callers, key)
		g.mu.Unlock()
	}
	close(c.ready)
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

func (g *Gate) startSession(ctx context.Context, key string) (*kernel.Session, error) {
	id := g.SessionID(key)
	opts := []kernel.Option{kernel.WithSessionID(id), kernel.WithClock(g.clock), kernel.WithIDs(g.newID)}
	if g.shared != nil {
		opts = append(opts, kernel.WithSharedBudget(g.shared))
	}
	if g.resumed[id] {
		s, err := kernel.Replay(ctx, g.log, g.k, id, opts...)
		if err != nil {
			return nil, fmt.Errorf("toolgate: resuming caller %q: %w", key, err)
		}
		return s, nil
	}
	initial, err := kernel.NewState(nil)
	if err != nil {
		return nil, err
	}
	s, err := kernel.NewSession(ctx, g.log, g.k, initial, opts...)
	if err != nil {
		return nil, fmt.Errorf("toolgate: starting caller %q: %w", key, err)
	}
	return s, nil
}

// rule returns the rule for tool: the first that matches, else the
// default rule when unknown tools are allowed.
func (g *Gate) rule(tool string) (Rule, bool) {
	for _, r := range g.cfg.Rules {
		if r.matches(tool) {
			return r, true
		}
	}
	if g.cfg.AllowUnknown {
		return g.cfg.DefaultRule, true
	}
	return Rule{}, false
}

// tierOrDefault is a rule's tier, claims.TierReadOnly when it names none.
func tierOrDefault(t claims.RiskTier) claims.RiskTier {
	if t == "" {
		return claims.TierReadOnly
	}
	return t
}

// Before decides c. Allow: the call is recorded as a kernel execution
// (or reservation) and counted, and the tool may run; report how it ended
// with After. Refuse: nothing ran; Explanation says why. AskApproval:
// the call's tier needs a human — ask, answer with Approve or Deny, and
// call Before again with the same call.
//
// The checks, in order: the tool must match a rule (or unknown tools be
// allowed); its cost must be computable; a DELETE or PRIVILEGE call needs
// an approval of exactly this call (caller, tool, arguments) not yet
// used; then the kernel's checks (budget, step limit, invariants over the
// counters "calls" and "calls/"+tool). An error means no decision could be
// made or recorded, and nothing ran.
func (g *Gate) Before(ctx context.Context, c Call) (Decision, error) {
	if c.ID == "" {
		c.ID = g.newID()
	}
	if c.Caller == "" {
		c.Caller = c.Principal.Key()
	}
	d := Decision{Call: c}
	r, ok := g.rule(c.Tool)
	if !ok {
		return g.refuse(ctx, d, "unknown_tool", fmt.Sprintf("tool %q is not in the gate's catalogue", c.Tool), "")
	}
	cost, err := r.price(c)
	if err != nil {
		return g.refuse(ctx, d, "cost", fmt.Sprintf("tool %q: cannot price the call: %v", c.Tool, err), "")
	}
	cl, err := g.caller(ctx, c.Caller)
	if err != nil {
		return Decision{}, err
	}

	var key callKey // what an approval is bound to: only needed when one is
	cl.mu.Lock()
	if _, dup := cl.open[c.ID]; dup {
		cl.mu.Unlock()
		return g.refuse(ctx, d, "duplicate_call", fmt.Sprintf("call id %q is already running", c.ID), "")
	}
	var approvalID string
	if r.needsApproval() {
		key = callKey{tool: c.Tool, digest: c.ArgumentsDigest()}
		if ds := cl.denied[key]; len(ds) > 0 {
			dn := ds[0]
			popFront(cl.denied, key)
			cl.mu.Unlock()
			why := fmt.Sprintf("tool %q (%s) denied by %s", c.Tool, r.Tier, dn.approver)
			if dn.reason != "" {
				why += ": " + dn.reason
			}
			return g.refuse(ctx, d, "denied", why, dn.id)
		}
		if ids := cl.granted[key]; len(ids) > 0 {
			approvalID = ids[0]
			popFront(cl.granted, key)
		} else {
			defer cl.mu.Unlock()
			return g.ask(ctx, cl, d, r, key)
		}
	}
	// Reserve the call id while the kernel decides, so that a second Before
	// with the same id is refused rather than run twice.
	cl.open[c.ID] = openCall{}
	cl.mu.Unlock()

	a := kernel.Action{ID: c.Tool, Name: c.Tool, Description: r.Description, Cost: cost, Category: string(r.Tier),
		Reversible: false, Input: c.Arguments, Tags: []string{"call:" + c.ID},
		Effects: []kernel.Effect{
			kernel.Count("calls", kernel.Int(1), kernel.Int(0)),
			kernel.Count("calls/"+c.Tool, kernel.Int(1), kernel.Int(0)),
		}}
	if approvalID != "" {
		a.Tags = append(a.Tags, "approval:"+approvalID)
	}
	var rec kernel.Record
	if r.Reserve {
		rec, err = cl.sess.Reserve(ctx, a)
	} else {
		rec, err = cl.sess.Execute(ctx, a)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if err != nil {
		delete(cl.open, c.ID)
		if approvalID != "" { // not used: it stays for the call's next attempt
			cl.granted[key] = append([]string{approvalID}, cl.granted[key]...)
		}
		var rej *kernel.RejectedError
		if errors.As(err, &rej) && rej.Seq != 0 {
			d.Verdict, d.Explanation, d.Seq = Refuse, rej.Verdict.Explain(), rej.Seq
			return d, nil
		}
		return Decision{}, err
	}
	cl.open[c.ID] = openCall{execID: rec.ExecID, tool: c.Tool, rule: r, cost: cost, reserved: r.Reserve}
	d.Verdict, d.ExecID, d.Seq, d.Reserved, d.ApprovalID = Allow, rec.ExecID, rec.Seq, r.Reserve, approvalID
	return d, nil
}

// popFront removes the first element of m[key], and the key with it when
// nothing is left, so that the maps hold only what is still to be used.
func popFront[T any](m map[callKey][]T, key callKey) {
	if rest := m[key][1:]; len(rest) > 0 {
		m[key] = rest
	} else {
		delete(m, key)
	}
}

// ask returns the request c waits on, making it (a claims evaluation on
// the log) the first time. cl.mu is held.
func (g *Gate) ask(ctx context.Context, cl *caller, d Decision, r Rule, key callKey) (Decision, error) {
	if ap, ok := cl.waiting[key]; ok {
		d.Verdict, d.Explanation, d.Seq = AskApproval, ap.req.Question, ap.seq
		req := ap.req
		req.Awaiting = slices.Clone(req.Awaiting)
		d.Approval = &req
		return d, nil
	}
	c := d.Call
	if limit := g.cfg.MaxWaiting; limit > 0 && len(cl.waiting) >= limit {
		return g.refuse(ctx, d, "too_many_waiting", fmt.Sprintf("tool %q (%s): %d calls of this caller already wait for a human", c.Tool, r.Tier, len(cl.waiting)), "")
	}
	shown, err := showArguments(c.Arguments)
	if err != nil {
		return g.refuse(ctx, d, "unshowable_arguments", fmt.Sprintf("tool %q (%s) needs a human's approval: %v", c.Tool, r.Tier, err), "")
	}
	question := fmt.Sprintf("Allow the %s tool call %q with arguments %s?", r.Tier, c.Tool, shown)
	claim := claims.Claim{
		ID:          "call",
		Statement:   fmt.Sprintf("call tool %q with arguments sha256:%s", c.Tool, key.digest),
		ClaimType:   claims.ClaimDecision,
		Uncertainty: claims.Uncertainty{Method: claims.MethodConfidenceScore, Value: 0, Interpretation: "the agent asks to run this exact call", GateRecommendation: claims.RecommendExecute},
		RiskTier:    r.Tier,
		IfWrongCost: r.Description,
	}
	b := claims.NewBundle("", time.Time{}, agentName(c.Caller), claim)
	ev, err := g.claims.Evaluate(ctx, b, g.claimsContext(c.Caller))
	if err != nil {
		return Decision{}, fmt.Errorf("toolgate: asking for approval: %w", err)
	}
	if ev.Decision != claims.DecisionEscalate {
		return Decision{}, fmt.Errorf("toolgate: approval request for %q evaluated %s: %s", c.Tool, ev.Decision, ev.Reason)
	}
	ap := &approval{key: key, bundle: ev.Bundle, seq: ev.Seq, req: ApprovalRequest{ID: ev.Bundle.ID, Caller: c.Caller, Tool: c.Tool,
		ArgumentsDigest: key.digest, Tier: r.Tier, Awaiting: slices.Clone(ev.Pending), Question: question}}
	cl.waiting[key] = ap
	g.mu.Lock()
	g.approvals[ap.req.ID] = ap
	g.mu.Unlock()
	d.Verdict, d.Explanation, d.Seq = AskApproval, question, ev.Seq
	req := ap.req
	req.Awaiting = slices.Clone(req.Awaiting)
	d.Approval = &req
	return d, nil
}

// agentName is the origin agent of a caller's approval requests (claims
// needs a non-empty one).
func agentName(caller string) string {
	if caller == "" {
		return "toolgate"
	}
	return caller
}

func (g *Gate) claimsContext(caller string) claims.Context {
	return claims.Context{Actor: agentName(caller), Clearance: claims.TierPrivilege}
}

// MaxShownArguments is the most bytes of arguments (as compact JSON) a
// call that needs a human may have: the question shows them in full, so
// that what the human approves is exactly what runs.
const MaxShownArguments = 4096

// showArguments returns a call's arguments as the human is asked about
// them: compact JSON, in full, with format and control characters (a
// right-to-left override, a zero-width space) written as escapes so that
// nothing is hidden. Arguments that are not one JSON value a reader would
// read one way — duplicate keys, invalid UTF-8, integers a double would
// round — or longer than MaxShownArguments cannot be shown faithfully and
// are refused.
func showArguments(b []byte) (string, error) {
	if len(b) == 0 {
		return "(none)", nil
	}
	if _, err := canon.Decode(b); err != nil {
		return "", fmt.Errorf("arguments a human cannot read one way: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return "", fmt.Errorf("arguments a human cannot read one way: %v", err)
	}
	if compact.Len() > MaxShownArguments {
		return "", fmt.Errorf("arguments too long to show a human: %d bytes, at most %d", compact.Len(), MaxShownArguments)
	}
	var sb strings.Builder
	for _, r := range compact.String() {
		switch {
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			if r > 0xFFFF {
				fmt.Fprintf(&sb, `\U%08x`, r)
			} else {
				fmt.Fprintf(&sb, `\u%04x`, r)
			}
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String(), nil
}

// OneLine returns s with its control characters (line breaks among them)
// as spaces and its invalid UTF-8 as U+FFFD: what the gate does to every
// explanation it gives a model or a human, whoever wrote the text, and
// what an adapter wording a refusal of its own should do too.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// RefuseEntry is the payload of a KindRefuse entry: a call refused before
// the kernel saw it.
type RefuseEntry struct {
	Session         string `json:"session"`
	Caller          string `json:"caller"`
	CallID          string `json:"call_id"`
	Tool            string `json:"tool"`
	Reason          string `json:"reason"` // unknown_tool, cost, duplicate_call, denied
	Explanation     string `json:"explanation"`
	ArgumentsSHA256 string `json:"arguments_sha256"`
	ArgumentsSize   int    `json:"arguments_size"`
	Approval        string `json:"approval,omitempty"` // the denied request
}

// refuse records a refusal the kernel did not make and returns it.
func (g *Gate) refuse(ctx context.Context, d Decision, reason, explanation, approvalID string) (Decision, error) {
	c := d.Call
	explanation = OneLine(explanation)
	e := RefuseEntry{Session: g.SessionID(c.Caller), Caller: c.Caller, CallID: c.ID, Tool: c.Tool, Reason: reason,
		Explanation: explanation, ArgumentsSHA256: c.ArgumentsDigest(), ArgumentsSize: len(c.Arguments), Approval: approvalID}
	entry, err := g.log.Append(ctx, KindRefuse, e.appendJSON(nil), trace.At(g.clock()))
	if err != nil {
		return Decision{}, fmt.Errorf("toolgate: recording refusal of %q: %w", c.Tool, err)
	}
	d.Verdict, d.Explanation, d.Seq = Refuse, explanation, entry.Seq
	return d, nil
}

// Pending lists the approval requests waiting for a human, oldest first
// by id.
func (g *Gate) Pending() []ApprovalRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]ApprovalRequest, 0, len(g.approvals))
	for _, ap := range g.approvals {
		req := ap.req
		req.Awaiting = slices.Clone(req.Awaiting)
		out = append(out, req)
	}
	slices.SortFunc(out, func(a, b ApprovalRequest) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Approve records approver's approval of the request id (a claims
// approval, on the log) and reports whether the call may now run: true
// once every required approver has approved. The approval is bound to the
// request's caller, tool and arguments, and is used by the next Before of
// exactly that call, once.
func (g *Gate) Approve(ctx context.Context, id, approver, reason string) (bool, error) {
	return g.decide(ctx, id, approver, claims.ApprovalApproved, reason)
}

// Deny records approver's rejection of the request id: the next Before of
// the call is refused with the approver's reason (and the one after asks
// again).
func (g *Gate) Deny(ctx context.Context, id, approver, reason string) error {
	_, err := g.decide(ctx, id, approver, claims.ApprovalRejected, reason)
	return err
}

func (g *Gate) decide(ctx context.Context, id, approver string, dec claims.ApprovalDecision, reason string) (bool, error) {
	g.mu.Lock()
	ap, ok := g.approvals[id]
	var cl *caller
	if ok {
		cl = g.callers[ap.req.Caller]
	}
	g.mu.Unlock()
	if !ok || cl == nil {
		return false, fmt.Errorf("%w: %q", ErrUnknownApproval, id)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.waiting[ap.key] != ap {
		return false, fmt.Errorf("%w: %q was decided already", ErrUnknownApproval, id)
	}
	ev, err := g.claims.Approve(ctx, ap.bundle, g.claimsContext(ap.req.Caller), approver, dec, reason)
	if err != nil {
		return false, fmt.Errorf("toolgate: recording %s of %q: %w", strings.ToLower(string(dec)), id, err)
	}
	switch ev.Decision {
	case claims.DecisionEscalate:
		ap.bundle = ev.Bundle
		ap.req.Awaiting = slices.Clone(ev.Pending)
		return false, nil
	case claims.DecisionPublish:
		cl.granted[ap.key] = append(cl.granted[ap.key], id)
	default: // REFUSE: a rejection
		cl.denied[ap.key] = append(cl.denied[ap.key], denial{id: id, approver: approver, reason: reason})
	}
	delete(cl.waiting, ap.key)
	g.mu.Lock()
	delete(g.approvals, id)
	g.mu.Unlock()
	return ev.Decision == claims.DecisionPublish, nil
}
