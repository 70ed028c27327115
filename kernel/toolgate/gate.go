package toolgate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/oneline"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// definitionTag starts the tag of an allowed call's kernel execution
// that names the pinned definition it ran against (Call.Definition):
// "definition:sha256:…".
const definitionTag = "definition:"

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
	// ErrInvalidConfig: New was given no log, no compiled policy, options
	// or Go invariants it cannot run.
	ErrInvalidConfig = errors.New("toolgate: invalid config")
)

// Gate puts the kernel between an agent and its tools. Before decides each
// call, After settles and records it, Approve and Deny take a human's
// answer; every decision is on the trace log before it is returned.
// A Gate is safe for concurrent use.
type Gate struct {
	log     *trace.Log
	k       *kernel.Kernel
	claims  *claims.Session
	clock   func() time.Time
	newID   func() string
	shared  kernel.SharedBudget
	windows RateWindows
	// policy is the compiled policy in force (comp; Reload replaces it).
	policy atomic.Pointer[Compiled]
	labels SharedLabels // WithSharedLabels (labels_shared.go)
	// labelsOn: labels is set and the policy in force has labels, flows
	// or conditions to share them for (set by New and Reload).
	labelsOn atomic.Bool
	// sharedPeriods, when the shared budget renews, opens its periods' rows.
	sharedPeriods *sharedPeriods
	obs           Observer // nil: nobody observes (observe.go)

	mu        sync.Mutex
	resumed   map[string]bool // kernel sessions already on the log
	callers   map[string]*caller
	live      callers                  // the callers by last use (callers.go)
	approvals map[string]*approval     // waiting requests by id, as their callers' lives hold them
	awaited   map[string]chan struct{} // closed once the request leaves approvals (Await)

	pending claims.PendingStore // the claims session's waiting bundles
	durable bool                // WithDurableApprovals (held.go)
}

// caller is one caller's kernel session and its life (lifecycle.go).
type caller struct {
	ready chan struct{} // closed once sess or err is set
	sess  *kernel.Session
	err   error
	lru   // guarded by Gate.mu

	// turn orders the caller's decisions; labels and windows (the core's
	// Snapshot) are changed under turn and mu, and read under turn.
	turn sync.Mutex
	// clears are the shared declassifications applied, by label
	// (WithSharedLabels; under turn).
	clears map[string]time.Time
	// at, when set, is the time the session records an execution at: the
	// time its decision was made.
	// (Unix nanoseconds, 0 when unset: an atomic, for a session's clock
	// is read by After's settlements too).
	at atomic.Int64

	mu   sync.Mutex
	life // the rest under mu
}

// Option configures a Gate.
type Option func(*options)

type options struct {
	clock       func() time.Time
	newID       func() string
	shared      kernel.SharedBudget
	windows     RateWindows
	labels      SharedLabels
	callerLimit int
	idleCallers time.Duration
	durable     bool
	observers   []Observer
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

// New returns a Gate recording on log that enforces comp (Policy.Compile).
// The kernel is built from its policy (Budget, MinCost, Invariants and
// GoInvariants); a caller whose session is already on the log (the gate
// restarted over a durable log) resumes it through kernel.Replay, with
// its budget spent as recorded.
func New(ctx context.Context, log *trace.Log, comp *Compiled, opts ...Option) (*Gate, error) {
	if log == nil {
		return nil, fmt.Errorf("%w: no trace log", ErrInvalidConfig)
	}
	if comp == nil {
		return nil, fmt.Errorf("%w: no compiled policy (Policy.Compile)", ErrInvalidConfig)
	}
	o := options{clock: time.Now, newID: func() string { return uuid.Must(uuid.NewV7()).String() },
		callerLimit: defaultCallerLimit, idleCallers: defaultIdleCallers}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.checkCallers(); err != nil {
		return nil, err
	}
	cfg := &comp.cfg
	k, err := kernel.New(kernel.Config{Budget: kernelBudget(comp), MinActionCost: cfg.MinCost, Invariants: comp.invariants})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	policy := claims.DefaultPolicy()
	policy.Approvers = claimsApprovers(cfg.Approvers)
	pending := claims.NewMemoryPending()
	cs, err := claims.NewSession(ctx, log, policy, claims.WithClock(o.clock), claims.WithIDs(o.newID), claims.WithPending(pending))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	g := &Gate{log: log, k: k, claims: cs, clock: o.clock, newID: o.newID, shared: o.shared, windows: o.windows, labels: o.labels,
		resumed: map[string]bool{}, callers: map[string]*caller{}, approvals: map[string]*approval{}, awaited: map[string]chan struct{}{},
		live: callers{limit: o.callerLimit, idle: o.idleCallers}, pending: pending, durable: o.durable,
		obs: joinObservers(o.observers)}
	g.policy.Store(comp)
	g.labelsOn.Store(g.labels != nil && comp.usesLabels()) // nothing to share: no store round trip per call
	if comp.sharedPeriod != nil && o.shared != nil {
		if g.sharedPeriods, err = newSharedPeriods(o.shared, comp.sharedPeriod); err != nil {
			return nil, err
		}
	}
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
	if g.durable {
		if err := g.restoreApprovals(ctx); err != nil {
			return nil, fmt.Errorf("toolgate: restoring approvals: %w", err)
		}
	}
	return g, nil
}

// restoreApprovals resumes every caller whose life, replayed from the
// log, holds a request, approval or denial not yet used or expired, so
// that Pending lists its requests again (WithDurableApprovals).
func (g *Gate) restoreApprovals(ctx context.Context) error {
	if err := claims.RebuildPending(ctx, g.log, g.pending); err != nil {
		return err
	}
	lives, err := g.replay(ctx, "")
	if err != nil {
		return err
	}
	var keys []string
	for session, l := range lives {
		if l.holds() {
			keys = append(keys, strings.TrimPrefix(session, SessionPrefix))
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		cl, err := g.caller(ctx, key)
		if err != nil {
			return err
		}
		g.release(cl)
	}
	return nil
}

// Kernel returns the kernel every caller's session runs: what
// kernel.Replay needs to rebuild one from the log.
func (g *Gate) Kernel() *kernel.Kernel { return g.k }

// SessionID returns the session id of caller's calls, as the gate's
// entries name it: its kernel session's id too, except that when the
// policy's budget renews (budget_period) the kernel session's is this
// followed by "#renewing" (a kernel configuration of its own).
func (g *Gate) SessionID(caller string) string { return SessionPrefix + caller }

// Meter returns caller's budget and step counters, and false when the
// caller has made no call yet. When the policy's budget renews, the
// kernel session's budget only records every charge: the period's
// budget is Budgets' (and an Observer's).
func (g *Gate) Meter(caller string) (kernel.Meter, bool) {
	c := g.resumeForMeter(caller)
	if c == nil {
		return kernel.Meter{}, false
	}
	defer g.release(c)
	<-c.ready
	if c.sess == nil {
		return kernel.Meter{}, false
	}
	return c.sess.Meter(), true
}

// caller returns the caller's session, marked busy (release it),
// starting it on first use or resuming it from the log after a restart or
// once it was let go (callers.go). Concurrent first calls of one caller
// wait for one start.
func (g *Gate) caller(ctx context.Context, key string) (*caller, error) {
	now := g.clock()
	g.mu.Lock()
	c := g.acquireLocked(key)
	ok := c != nil
	if !ok {
		c = &caller{ready: make(chan struct{}), life: g.newLife()}
		c.key, c.busy, c.used = key, 1, now
		g.callers[key] = c
		g.live.pushFront(c)
	}
	g.evictLocked(now)
	g.mu.Unlock()
	if ok {
		select {
		case <-c.ready:
		case <-ctx.Done():
			g.release(c)
			return nil, ctx.Err()
		}
		if c.err != nil {
			g.release(c)
			return nil, c.err
		}
		return c, nil
	}
	// Other calls of this caller wait on this start: one call's
	// cancellation must not fail theirs.
	c.sess, c.err = g.startSession(context.WithoutCancel(ctx), key, c)
	if c.err != nil {
		// Forget the failure so that a later call tries again.
		g.mu.Lock()
		if g.callers[key] == c {
			delete(g.callers, key)
			g.live.unlink(c)
		}
		c.busy--
		g.mu.Unlock()
	}
	close(c.ready)
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

func (g *Gate) startSession(ctx context.Context, key string, cl *caller) (*kernel.Session, error) {
	id := g.kernelSession(key)
	clock := func() time.Time {
		if at := cl.at.Load(); at != 0 {
			return time.Unix(0, at).UTC()
		}
		return g.clock()
	}
	// The gate never rolls back, and holds each call's execution until
	// After: its sessions keep no Record, only open calls' ledger entries.
	opts := []kernel.Option{kernel.WithSessionID(id), kernel.WithClock(clock), kernel.WithIDs(g.newID),
		kernel.WithHorizon(0), kernel.WithHeldExecutions()}
	if g.shared != nil {
		opts = append(opts, kernel.WithSharedBudget(g.sharedFor(clock)))
	}
	g.mu.Lock()
	resume := g.resumed[id]
	// A caller whose budget renews may have a session from before it did:
	// its life (labels, windows, approvals, spend) is on the log too.
	replayLife := resume || g.resumed[g.SessionID(key)]
	g.mu.Unlock()
	var s *kernel.Session
	var err error
	if resume {
		s, err = kernel.Replay(ctx, g.log, g.k, id, opts...)
		if err != nil {
			return nil, fmt.Errorf("toolgate: resuming caller %q: %w", key, err)
		}
	}
	if replayLife {
		lives, err := g.replay(ctx, g.SessionID(key))
		if err != nil {
			return nil, fmt.Errorf("toolgate: resuming caller %q: %w", key, err)
		}
		if l := lives[g.SessionID(key)]; l != nil {
			cl.mu.Lock()
			cl.life = *l
			g.mu.Lock()
			for _, ap := range l.waiting {
				g.approvals[ap.req.ID] = ap
			}
			g.mu.Unlock()
			cl.mu.Unlock()
		}
	}
	if s != nil {
		return s, nil
	}
	initial, err := kernel.NewState(nil)
	if err != nil {
		return nil, err
	}
	s, err = kernel.NewSession(ctx, g.log, g.k, initial, opts...)
	if err != nil {
		return nil, fmt.Errorf("toolgate: starting caller %q: %w", key, err)
	}
	return s, nil
}

// replay reads the log and applies the entries of the session (or of
// every toolgate session when session is "") to a life each, by session:
// what the live gate applied as it wrote them. Requests, their answers,
// their expiry and the denials used are read only when durable
// (WithDurableApprovals). No call is open after a replay; evaluations no
// request named are let go.
func (g *Gate) replay(ctx context.Context, session string) (map[string]*life, error) {
	lives := map[string]*life{}
	get := func(s string) *life {
		s = g.lifeSession(s)
		if session != "" && s != session || !strings.HasPrefix(s, SessionPrefix) {
			return nil
		}
		l := lives[s]
		if l == nil {
			nl := g.newLife()
			l = &nl
			lives[s] = l
		}
		return l
	}
	owner := map[string]*life{} // by request id: whose it is
	evals := map[string]evaluation{}
	per := g.comp().windowLengths()
	ttl := g.comp().cfg.ApprovalTTL
	for e, err := range g.log.Entries(ctx, 0) {
		if err != nil {
			return nil, err
		}
		if err := replayEntry(e, get, owner, evals, per, ttl, g.durable); err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Seq, err)
		}
	}
	for _, l := range lives {
		clear(l.evals)
	}
	return lives, nil
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
// The checks, in order: the decision core (Compiled.Decide: the first
// rule that applies to the tool, the principal and the arguments, its
// effect, flow, rate window, price and tier); a DELETE or PRIVILEGE call
// needs an approval of exactly this call (caller, tool, arguments) not
// yet used; a shared rate window (WithSharedWindows) must admit it; then
// the kernel's checks (budget, step limit, invariants over the counters
// "calls" and "calls/"+tool). The Decision names the rule and the
// condition that decided. An error means no decision could be made or
// recorded, and nothing ran.
func (g *Gate) Before(ctx context.Context, c Call) (Decision, error) {
	if g.obs == nil {
		return g.before(ctx, c, time.Time{}, nil, nil)
	}
	return g.observeBefore(ctx, c, nil, nil)
}

// BeforeWritten is Before, except that an allowed call's decision is
// returned as soon as it is written to the log, before it is durable,
// with durable, which returns once it is (or the error that stopped it:
// the log is then broken). Every other verdict, and an error, is durable
// when returned, and durable is nil. Under a log that is durable when an
// append returns (trace.SyncEveryAppend, memory, SQL) durable returns at
// once.
//
// It lets a host run the tool while the decision's fsync runs, so that a
// call's critical path holds one fsync (its result's, which covers the
// decision) rather than two. The price is the order of the two on disk:
// a crash of the machine (not of the process: the decision is written)
// between the tool's start and the end of that fsync may lose the
// decision of a tool that ran or is running, and with it its charge and
// its rate-window count; the host must not answer the call before durable
// has returned nil, and After's outcome is durable as always, so nothing
// acknowledged is ever lost. Use Before where a tool's effect must never
// be without its record.
func (g *Gate) BeforeWritten(ctx context.Context, c Call) (d Decision, durable func() error, err error) {
	if g.obs == nil {
		d, err = g.before(ctx, c, time.Time{}, nil, &durable)
	} else {
		d, err = g.observeBefore(ctx, c, nil, &durable)
	}
	return d, durable, err
}

// before is Before, and Resume when res is not nil; start, when not
// zero, is when it was called, kept with an allowed call for the gate's
// Observer.
//
// The decision is taken under the caller's locks and written to the log
// there; it becomes durable after they are released, so that the
// decisions of concurrent calls (of one caller too) share an fsync under
// a log with group commit. It is returned only once durable, except that
// when later is not nil an allowed call's decision is returned at once
// with *later set to the wait (BeforeWritten).
func (g *Gate) before(ctx context.Context, c Call, start time.Time, res *resumption, later *func() error) (Decision, error) {
	dctx, dur := trace.DeferDurability(ctx)
	d, err := g.beforeWritten(dctx, c, start, res)
	if err == nil && d.Verdict == Allow && later != nil {
		*later = dur.Wait
		return d, nil
	}
	if werr := dur.Wait(); werr != nil {
		return Decision{}, fmt.Errorf("toolgate: the decision on %q is not durable: %w", c.Tool, werr)
	}
	return d, err
}

// beforeWritten is before up to the decision written, not yet durable.
func (g *Gate) beforeWritten(ctx context.Context, c Call, start time.Time, res *resumption) (Decision, error) {
	if c.ID == "" {
		c.ID = g.newID()
	}
	if c.Caller == "" {
		c.Caller = c.Principal.Key()
	}
	d := Decision{Call: c}
	if g.labels == nil && !g.known(c.Caller) {
		// A caller with nothing on the log has an empty snapshot: a call
		// the rules refuse for that caller is refused without starting a
		// kernel session for it.
		at := trace.Normalize(g.clock())
		if ru := g.comp().Decide(g.firstSnapshot(), c, at); ru.Verdict == Refuse {
			d.Rule, d.Condition, d.when = ru.Rule, ru.Condition, ru.When
			return g.refuse(ctx, d, ru.Reason, ru.Explanation, "", at)
		}
	}
	cl, err := g.caller(ctx, c.Caller)
	if err != nil {
		return Decision{}, err
	}
	defer g.release(cl)
	// One decision of a caller at a time: its windows and labels are read
	// and updated around the kernel's execution.
	cl.turn.Lock()
	defer cl.turn.Unlock()
	at := trace.Normalize(g.clock())
	if g.labelsOn.Load() {
		if err := g.importLabels(ctx, cl, &c, at); err != nil {
			return Decision{}, err
		}
	}
	ru := g.comp().Decide(g.snapshot(cl, &c, at), c, at)
	d.Rule, d.Condition, d.when = ru.Rule, ru.Condition, ru.When
	if ru.Verdict == Refuse {
		return g.refuse(ctx, d, ru.Reason, ru.Explanation, "", at)
	}
	if ru.Verdict == AskApproval && g.comp().period != nil {
		// No human is asked about a call its budget period cannot pay for.
		if refused, err := g.overBudget(ctx, cl, &d, ru.Cost, at); refused || err != nil {
			return d, err
		}
	}
	cl.mu.Lock()
	p, key, err := g.arrive(ctx, cl, &d, &ru, res, at)
	cl.mu.Unlock()
	if err == nil && p.step == stepRun {
		err = g.run(ctx, cl, &d, &ru, key, p.approval, start, at)
	}
	if err != nil {
		return Decision{}, err
	}
	return d, nil
}

// arrive steps the call d.Call in (cl.mu held) and performs the plan,
// unless it is to run: what the call's approvals expired at first; a
// refusal; a request, new or waiting; an answer Resume brought, after
// which the call arrives again without it.
func (g *Gate) arrive(ctx context.Context, cl *caller, d *Decision, ru *Ruling, res *resumption, at time.Time) (plan, callKey, error) {
	c := &d.Call
	var key callKey // what an approval is bound to: only needed when one is
	if ru.Verdict == AskApproval {
		key = callKey{tool: c.Tool, digest: c.ArgumentsDigest(), tier: ru.Tier}
		if _, err := g.expire(ctx, cl, &key, at); err != nil {
			return plan{}, key, err
		}
	}
	for {
		a := arrival{call: *c, verdict: ru.Verdict, rule: ru.Rule, explanation: ru.Explanation, key: key, res: res, maxWaiting: g.comp().cfg.MaxWaiting}
		if res != nil && res.request != "" {
			g.mu.Lock()
			a.asked = g.approvals[res.request]
			g.mu.Unlock()
		}
		p := cl.arrive(a)
		switch p.step {
		case stepRun:
			return p, key, nil
		case stepRefuse:
			d.Condition = p.condition
			dd, e, err := g.refused(ctx, *d, p.reason, p.why, p.approval, at)
			if err == nil {
				*d = dd
				cl.applyRefuse(e)
			}
			return p, key, err
		case stepRefuseAnswer:
			seq, err := g.recordAnswerRefusal(ctx, *p.refusal, at)
			if err != nil {
				return p, key, err
			}
			d.Verdict, d.Condition, d.Explanation, d.Seq = Refuse, p.condition, OneLine(p.why), seq
			if p.waiting != nil {
				d.Approval = p.waiting.request()
			}
			return p, key, nil
		case stepWait:
			ap := p.waiting
			d.Verdict, d.Explanation, d.Seq, d.Approval = AskApproval, ap.req.Question, ap.seq, ap.request()
			return p, key, nil
		case stepAsk:
			if why := g.wouldReject(cl, d, ru); why != "" {
				// Nobody is asked about a call the kernel would refuse.
				d.Condition = "kernel"
				err := g.refuseIn(ctx, d, "kernel", fmt.Sprintf("tool %q (%s, kernel): %s; nobody was asked to approve it", c.Tool, d.Rule, why), "", at)
				return plan{step: stepRefuse}, key, err
			}
			return p, key, g.ask(ctx, cl, d, ru, key, &p, at)
		case stepAnswer:
			if _, refusal, err := g.answer(ctx, cl, p.waiting, p.answer, c); err != nil {
				if refusal == 0 {
					return p, key, err
				}
				d.Verdict, d.Condition, d.Explanation, d.Seq = Refuse, gatelog.ConditionAnswer, OneLine(fmt.Sprintf("tool %q: %v", c.Tool, err)), refusal
				if cl.waiting[key] == p.waiting {
					d.Approval = p.waiting.request()
				}
				p.step = stepRefuseAnswer
				return p, key, nil
			}
			res = &resumption{request: res.request} // recorded: the call arrives again without it
		}
	}
}

// run performs a call arrive reserved: the shared windows, then the
// kernel's execution (or reservation), applied to the caller's life once
// recorded; a call that does not run gives back what it reserved.
func (g *Gate) run(ctx context.Context, cl *caller, d *Decision, ru *Ruling, key callKey, approvalID string, start, at time.Time) error {
	c, r := &d.Call, ru.rule
	unreserve := func() {
		cl.mu.Lock()
		cl.rejected(c.ID, key, approvalID)
		cl.mu.Unlock()
	}
	if g.windows != nil {
		for _, w := range ru.Windows {
			ok, seen, err := g.windows.Admit(ctx, SharedWindowKey(c.Caller, w.ID), at, w.Per, w.Limit)
			if err != nil {
				unreserve()
				return fmt.Errorf("toolgate: shared rate window: %w", err)
			}
			if !ok {
				unreserve()
				d.Condition = gatelog.ConditionRate
				return g.refuseIn(ctx, d, "rate", fmt.Sprintf("tool %q (%s, rate): %d calls in the last %s, at most %d (shared)", c.Tool, d.Rule, seen, w.Per, w.Limit), "", at)
			}
		}
	}

	a := callAction(c, ru)
	if approvalID != "" {
		a.Tags = append(a.Tags, "approval:"+approvalID)
	}
	conv := g.conversation(c)
	if conv != "" {
		a.Tags = append(a.Tags, conversationTagPrefix+conv)
	}
	if g.comp().period != nil {
		if refused, err := g.overBudget(ctx, cl, d, ru.Cost, at); refused || err != nil {
			unreserve()
			return err
		}
	}
	var rec kernel.Record
	var err error
	cl.at.Store(at.UnixNano()) // the execution is recorded at the decision's time
	if r.Reserve {
		rec, err = cl.sess.Reserve(ctx, a)
	} else {
		rec, err = cl.sess.Execute(ctx, a)
	}
	cl.at.Store(0)
	if err != nil {
		unreserve()
		var rej *kernel.RejectedError
		if errors.As(err, &rej) && rej.Seq != 0 {
			d.Condition = "kernel"
			d.Verdict, d.Explanation, d.Seq = Refuse, OneLine(fmt.Sprintf("tool %q (%s, kernel): %s", c.Tool, d.Rule, rej.Verdict.Explain())), rej.Seq
			return nil
		}
		return err
	}
	d.Verdict, d.ExecID, d.Seq, d.Reserved, d.ApprovalID, d.Cost = Allow, rec.ExecID, rec.Seq, r.Reserve, approvalID, ru.Cost
	// At the execution's recorded time (the log's, never before the entry
	// before it: trace.Log), as replay reads it.
	x := executed{callID: c.ID, approval: approvalID, at: rec.Time, labels: ru.Labels, labelTTL: r.LabelTTL, conv: conv, windows: ru.Windows,
		open: openCall{execID: rec.ExecID, tool: c.Tool, rule: r, cost: ru.Cost, reserved: r.Reserve, definition: c.Definition, trace: traceOf(c)}}
	if !start.IsZero() {
		x.open.obs = &observed{decision: *d, started: start, allowed: time.Now()}
	}
	cl.mu.Lock()
	cl.applyExecuted(x)
	cl.mu.Unlock()
	if g.labels != nil && len(x.labels) > 0 {
		return g.shareLabels(ctx, cl, c.Caller, &x)
	}
	return nil
}

// callAction is the kernel action of the call c as ru rules it: tagged
// with its call id, its rule's labels, its windows, the pinned
// definition it is made against and its when record (and, added by run,
// the approval it runs on).
func callAction(c *Call, ru *Ruling) kernel.Action {
	r := ru.rule
	extra := 0 // the approval (added by run), definition and when tags, room made for them at once
	if c.Definition != "" {
		extra++
	}
	tid := traceOf(c)
	if tid != "" {
		extra++
	}
	if ru.When != nil {
		extra++
	}
	tags := make([]string, 0, 2+extra+len(r.tags)+len(ru.Windows))
	tags = append(tags, "call:"+c.ID)
	tags = append(tags, r.tags...)
	for _, w := range ru.Windows {
		if w.tag != "" {
			tags = append(tags, w.tag)
		} else {
			tags = append(tags, windowTagPrefix+w.ID)
		}
	}
	if c.Definition != "" {
		tags = append(tags, definitionTag+c.Definition)
	}
	if tid != "" {
		tags = append(tags, traceTag+tid)
	}
	if ru.When != nil {
		tags = appendWhenTag(tags, ru.When)
	}
	effects := r.effects
	if effects == nil {
		effects = callEffects(c.Tool)
	}
	return kernel.Action{ID: c.Tool, Name: c.Tool, Description: r.Description, Cost: ru.Cost, Category: string(r.Tier),
		Reversible: false, Input: c.Arguments, Tags: tags, Effects: effects}
}

// wouldReject is the kernel's answer, without charging or recording
// anything (kernel.Session.Evaluate), to whether the call d would run
// now: "" when it would, else why not. A call that needs a human is
// checked so before anyone is asked — its budget, step limit and
// invariants — and again, exactly, by the kernel's execution when it
// runs on its approval (spend may have changed meanwhile). A shared
// budget is consulted only then.
func (g *Gate) wouldReject(cl *caller, d *Decision, ru *Ruling) string {
	v := cl.sess.Evaluate(callAction(&d.Call, ru))
	if v.Allowed() {
		return ""
	}
	return v.Explain()
}

// known reports whether the caller has a session, in this gate or on
// its log.
func (g *Gate) known(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.callers[key]
	return ok || g.resumed[g.SessionID(key)] || g.resumed[g.kernelSession(key)]
}

// SharedWindowKey is the key under which a gate with WithSharedWindows
// counts the calls of caller in the window id ("rule:<rule>" or
// "rule:<rule>|tool:<tool>", <rule> the rule's name or "#" and its
// index): "toolgate|" + caller + "|" + id.
func SharedWindowKey(caller, id string) string { return "toolgate|" + caller + "|" + id }

// ask makes the request a call waits on (stepAsk, cl.mu held): a
// claims evaluation, the request recorded (gatelog.KindAsk, with
// WithDurableApprovals) and applied to the caller's life.
func (g *Gate) ask(ctx context.Context, cl *caller, d *Decision, ru *Ruling, key callKey, p *plan, at time.Time) error {
	c := d.Call
	claim := claims.Claim{
		ID:          "call",
		Statement:   fmt.Sprintf("call tool %q with arguments sha256:%s (%s, %s)", c.Tool, key.digest, d.Rule, d.Condition),
		ClaimType:   claims.ClaimDecision,
		Uncertainty: claims.Uncertainty{Method: claims.MethodConfidenceScore, Value: 0, Interpretation: "the agent asks to run this exact call", GateRecommendation: claims.RecommendExecute},
		RiskTier:    key.tier,
		IfWrongCost: ru.rule.Description,
	}
	b := claims.NewBundle("", time.Time{}, agentName(c.Caller), claim)
	ev, err := g.claims.Evaluate(ctx, b, g.claimsContext(c.Caller))
	if err != nil {
		return fmt.Errorf("toolgate: asking for approval: %w", err)
	}
	if ev.Decision != claims.DecisionEscalate {
		return fmt.Errorf("toolgate: approval request for %q evaluated %s: %s", c.Tool, ev.Decision, ev.Reason)
	}
	cl.applyEvaluation(ev.Bundle, ev.Seq)
	e := gatelog.Ask{Approval: ev.Bundle.ID, Session: g.SessionID(c.Caller), Caller: c.Caller, Principal: c.Principal.Key(), CallID: c.ID,
		Tool: c.Tool, ArgumentsSHA256: key.digest, Tier: key.tier, Arguments: p.shown, Question: p.question, Asked: at}
	ttl := g.comp().cfg.ApprovalTTL
	if ttl > 0 {
		exp := at.Add(ttl)
		e.Expires = &exp
	}
	if g.durable {
		b, err := json.Marshal(e)
		if err == nil {
			_, err = g.log.Append(ctx, gatelog.KindAsk, b, trace.At(at))
		}
		if err != nil {
			delete(cl.evals, e.Approval)
			return fmt.Errorf("toolgate: recording the approval request: %w", err)
		}
	}
	ch := cl.applyAsk(e, ttl)
	if ch.put == nil {
		return fmt.Errorf("toolgate: approval request %q for %q is not held", e.Approval, c.Tool)
	}
	g.index(ch)
	d.Verdict, d.Explanation, d.Seq, d.Approval = AskApproval, ch.put.req.Question, ch.put.seq, ch.put.request()
	return nil
}

// index keeps the gate's index of waiting requests as an applied entry
// changed the caller's life: a request gone from it wakes whoever Awaits
// it.
func (g *Gate) index(ch indexChange) {
	if ch.put == nil && ch.gone == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch.put != nil {
		g.approvals[ch.put.req.ID] = ch.put
	}
	if ch.gone != "" {
		delete(g.approvals, ch.gone)
		if done, ok := g.awaited[ch.gone]; ok {
			close(done)
			delete(g.awaited, ch.gone)
		}
	}
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

// maxShownArguments is the most bytes of arguments (as compact JSON) a
// call that needs a human may have: the question shows them in full, so
// that what the human approves is exactly what runs.
const maxShownArguments = 4096

// showArguments returns a call's arguments as the human is asked about
// them: compact JSON, in full, with format and control characters (a
// right-to-left override, a zero-width space) written as escapes so that
// nothing is hidden. Arguments that are not one JSON value a reader would
// read one way — duplicate keys, member names that differ only in case,
// invalid UTF-8, integers a double would round — or longer than
// maxShownArguments cannot be shown faithfully and are refused.
func showArguments(b []byte) (string, error) {
	if len(b) == 0 {
		return "(none)", nil
	}
	if _, err := readArguments(b); err != nil {
		return "", fmt.Errorf("arguments a human cannot read one way: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return "", fmt.Errorf("arguments a human cannot read one way: %v", err)
	}
	if compact.Len() > maxShownArguments {
		return "", fmt.Errorf("arguments too long to show a human: %d bytes, at most %d", compact.Len(), maxShownArguments)
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

// OneLine returns s with its control characters (line breaks among
// them) and the line and paragraph separators U+2028 and U+2029 as
// spaces and its invalid UTF-8 as U+FFFD: what the gate does to every
// explanation it gives a model or a human, whoever wrote the text, and
// what an adapter wording a refusal of its own should do too.
func OneLine(s string) string { return oneline.String(s) }

// refuse records a refusal the kernel did not make and returns it.
func (g *Gate) refuse(ctx context.Context, d Decision, reason, explanation, approvalID string, at time.Time) (Decision, error) {
	d, _, err := g.refused(ctx, d, reason, explanation, approvalID, at)
	return d, err
}

// refuseIn is refuse into *d.
func (g *Gate) refuseIn(ctx context.Context, d *Decision, reason, explanation, approvalID string, at time.Time) error {
	dd, err := g.refuse(ctx, *d, reason, explanation, approvalID, at)
	if err == nil {
		*d = dd
	}
	return err
}

// refused is refuse, and the entry it recorded.
func (g *Gate) refused(ctx context.Context, d Decision, reason, explanation, approvalID string, at time.Time) (Decision, gatelog.Refuse, error) {
	c := d.Call
	explanation = OneLine(explanation)
	e := gatelog.Refuse{Session: g.SessionID(c.Caller), Caller: c.Caller, CallID: c.ID, Tool: c.Tool, Reason: reason,
		Explanation: explanation, ArgumentsSHA256: c.ArgumentsDigest(), ArgumentsSize: len(c.Arguments), Approval: approvalID,
		Condition: d.Condition, Definition: c.Definition, Trace: traceOf(&c), When: d.when}
	if d.Rule.Found {
		e.Rule, e.RuleName = d.Rule.id(), d.Rule.Name
		if d.Rule.Index >= 0 {
			e.Rule = "#" + strconv.Itoa(d.Rule.Index)
		}
	}
	entry, err := g.log.Append(ctx, gatelog.KindRefuse, e.AppendJSON(nil), trace.At(at))
	if err != nil {
		return Decision{}, e, fmt.Errorf("toolgate: recording refusal of %q: %w", c.Tool, err)
	}
	d.Verdict, d.Explanation, d.Seq = Refuse, explanation, entry.Seq
	return d, e, nil
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
// request's caller, tool, arguments and tier, and is used by the next
// Before of exactly that call at that tier, once.
func (g *Gate) Approve(ctx context.Context, id, approver, reason string) (bool, error) {
	return g.decide(ctx, id, approver, claims.ApprovalApproved, reason, nil)
}

// Deny records approver's rejection of the request id: the next Before of
// the call is refused with the approver's reason (and the one after asks
// again).
func (g *Gate) Deny(ctx context.Context, id, approver, reason string) error {
	_, err := g.decide(ctx, id, approver, claims.ApprovalRejected, reason, nil)
	return err
}

// GroupPrefix starts an approver name that a group answers for: with
// approvers {"PRIVILEGE": ["group:security"]}, any principal in the group
// "security" may approve (ApproveAs) or deny (DenyAs) a PRIVILEGE call.
const GroupPrefix = "group:"

// ErrNotAnApprover: ApproveAs or DenyAs was given a principal the request
// does not wait for.
var ErrNotAnApprover = errors.New("toolgate: not an approver of this request")

// ApproveAs is Approve by a principal: it answers for the first approver
// the request still waits for that names it — its Key(), or GroupPrefix
// and one of its Groups. The approval is recorded under that approver's
// name, its reason starting with the principal's key, so that the log
// says who answered for the group. A principal the request does not wait
// for, or one who answered it already (for a group or by key: one
// principal is one approver), is ErrNotAnApprover.
func (g *Gate) ApproveAs(ctx context.Context, id string, p Principal, reason string) (bool, error) {
	name, err := g.answersFor(id, p)
	if err != nil {
		return false, g.refusedAnswer(ctx, id, "", &p, claims.ApprovalApproved, err)
	}
	return g.decide(ctx, id, name, claims.ApprovalApproved, asReason(p, name, reason), &p)
}

// DenyAs is Deny by a principal, who answers as in ApproveAs.
func (g *Gate) DenyAs(ctx context.Context, id string, p Principal, reason string) error {
	name, err := g.answersFor(id, p)
	if err != nil {
		return g.refusedAnswer(ctx, id, "", &p, claims.ApprovalRejected, err)
	}
	_, err = g.decide(ctx, id, name, claims.ApprovalRejected, asReason(p, name, reason), &p)
	return err
}

// answersFor returns the approver name p answers for in request id.
func (g *Gate) answersFor(id string, p Principal) (string, error) {
	g.mu.Lock()
	ap, ok := g.approvals[id]
	g.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownApproval, id)
	}
	return ap.answersFor(p)
}

func asReason(p Principal, name, reason string) string {
	if key := p.Key(); key != name {
		if reason == "" {
			return "by " + key
		}
		return "by " + key + ": " + reason
	}
	return reason
}

// decide records approver's answer to request id; by, when not nil, is
// the principal answering (ApproveAs, DenyAs), who answers a request once.
// An answer refused for who gives it or when is recorded
// (gatelog.KindRefuseAnswer).
func (g *Gate) decide(ctx context.Context, id, approver string, dec claims.ApprovalDecision, reason string, by *Principal) (bool, error) {
	g.mu.Lock()
	ap, ok := g.approvals[id]
	var cl *caller
	if ok {
		cl = g.acquireLocked(ap.req.Caller)
	}
	g.mu.Unlock()
	if !ok || cl == nil {
		return false, g.refusedAnswer(ctx, id, approver, by, dec, fmt.Errorf("%w: %q", ErrUnknownApproval, id))
	}
	defer g.release(cl)
	<-cl.ready
	cl.mu.Lock()
	defer cl.mu.Unlock()
	granted, _, err := g.answer(ctx, cl, ap, &answerPlan{approver: approver, decision: dec, reason: reason, by: by}, nil)
	return granted, err
}

// refusedAnswer records the refusal err of an answer given through the
// gate's API to request id, and returns err.
func (g *Gate) refusedAnswer(ctx context.Context, id, approver string, by *Principal, dec claims.ApprovalDecision, err error) error {
	g.mu.Lock()
	ap := g.approvals[id]
	g.mu.Unlock()
	e := answerEntry(id, ap, approver, by, dec, answerReason(err), explainAnswer(err))
	if _, lerr := g.recordAnswerRefusal(ctx, e, trace.Normalize(g.clock())); lerr != nil {
		return errors.Join(err, lerr)
	}
	return err
}

// answer records the answer ans to ap (cl.mu held) and applies it to
// the caller's life; c, when not nil, is the call the answer came back
// with (Resume). An answer refused for who gives it or when is recorded
// (gatelog.KindRefuseAnswer), and refusal is its entry's sequence number.
func (g *Gate) answer(ctx context.Context, cl *caller, ap *approval, ans *answerPlan, c *Call) (granted bool, refusal uint64, err error) {
	id := ap.req.ID
	refused := func(err error) (bool, uint64, error) {
		e := answerEntry(id, ap, ans.approver, ans.by, ans.decision, answerReason(err), explainAnswer(err))
		if c != nil {
			e.CallID, e.Tool, e.ArgumentsSHA256 = c.ID, c.Tool, c.ArgumentsDigest()
		}
		seq, lerr := g.recordAnswerRefusal(ctx, e, trace.Normalize(g.clock()))
		if lerr != nil {
			return false, 0, errors.Join(err, lerr)
		}
		return false, seq, err
	}
	if err := cl.answerable(ap, ans, g.comp().cfg.SelfApproval); err != nil {
		return refused(err)
	}
	ev, err := g.claims.Approve(ctx, ap.bundle, g.claimsContext(ap.req.Caller), ap.slotFor(ans.approver), ans.decision, ans.reason)
	if err != nil {
		err = fmt.Errorf("toolgate: recording %s of %q: %w", strings.ToLower(string(ans.decision)), id, err)
		if errors.Is(err, claims.ErrNotRequired) || errors.Is(err, claims.ErrAlreadyDecided) {
			return refused(err)
		}
		return false, 0, err
	}
	g.index(cl.applyApproval(ev.Bundle))
	return ev.Decision == claims.DecisionPublish, 0, nil
}

// maxConversationLen is the longest conversation handle kept as given;
// a longer one is kept as its digest.
const maxConversationLen = 128

// conversation is the conversation that carries c's labels: "" unless
// the policy keeps labels per conversation (Policy.ConversationLabels),
// else the host's handle, or "sha256:" and its hex digest when it is
// over maxConversationLen bytes.
func (g *Gate) conversation(c *Call) string {
	if !g.comp().cfg.ConversationLabels || c.Conversation == "" {
		return ""
	}
	if len(c.Conversation) > maxConversationLen {
		sum := sha256.Sum256([]byte(c.Conversation))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return c.Conversation
}
