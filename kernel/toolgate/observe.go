package toolgate

import (
	"context"
	"time"

	"github.com/verity-go/verity/kernel"
)

// Observer is told what the gate decided and how each allowed call
// ended, once it is on the log: what metrics, traces and log lines are
// made of. Package kernel/toolgate/otel records OpenTelemetry spans and
// metrics from it; LogObserver writes one log/slog line per event.
//
// The gate calls an Observer on the goroutine of Before or After, after
// the decision or outcome is recorded and before it is returned, so an
// Observer must be safe for concurrent use and should be quick: the call
// waits for it. It must not call the Gate's Before or After. Its events
// are values it may keep; Call.Arguments is the caller's slice, to be
// read, never changed.
type Observer interface {
	// ObserveDecision is told of every Before (its Decision, or the error
	// that kept it from deciding) and of every Unanswered's refusal.
	ObserveDecision(ctx context.Context, e DecisionEvent)
	// ObserveOutcome is told of every After of an allowed call: its
	// Outcome, or the error that kept it from being recorded.
	ObserveOutcome(ctx context.Context, e OutcomeEvent)
}

// DecisionEvent is one Before, as an Observer is told of it.
type DecisionEvent struct {
	// Call is the call decided on, its ID and Caller filled in as
	// Decision.Call has them (as Before was given it when Err is set).
	Call Call
	// Decision is Before's answer; zero when Err is set.
	Decision Decision
	// Err is Before's error: no decision could be made or recorded.
	Err error
	// Start is when Before was called, Duration how long it took (its
	// log appends and their fsyncs included).
	Start    time.Time
	Duration time.Duration
	// Budget is the caller's budget after the decision (its remaining
	// part is Budget.Remaining; for a budget that renews, the current
	// period's: kernel.PeriodBudget); Metered is false when the caller has no
	// session in the gate (a call refused before the caller's first
	// call ran).
	Budget  kernel.Budget
	Metered bool
}

// OutcomeEvent is one After of an allowed call, as an Observer is told of
// it.
type OutcomeEvent struct {
	// Call is the call as After was given it, its Tool and Principal
	// filled in from its Decision.
	Call Call
	// Decision is the Allow that opened the call (zero when After was
	// given a call that was not open: Err is then ErrUnknownCall).
	Decision Decision
	// Outcome is After's account, Err its error (with an Outcome when
	// the settlement was recorded all the same, see After).
	Outcome Outcome
	Err     error
	// Failed reports that the tool failed (Result.Err was set).
	Failed bool
	// Decided is when Before was called for the call, Allowed when it
	// allowed it, Reported when After was called, Duration how long After
	// took. Reported − Allowed is how long the tool ran, as the gate
	// sees it; Reported + Duration − Decided the whole call.
	Decided, Allowed, Reported time.Time
	Duration                   time.Duration
	// Budget is the caller's budget after the outcome; Metered as in
	// DecisionEvent.
	Budget  kernel.Budget
	Metered bool
}

// observed is what an allowed call keeps for the Observer of its After.
type observed struct {
	decision         Decision
	started, allowed time.Time
}

// WithObserver has the gate tell o of every decision and outcome. Given
// more than once, every Observer is told, in the order given. Without
// one, the gate reads no clock and makes no event for it.
func WithObserver(o Observer) Option {
	return func(opts *options) {
		if o != nil {
			opts.observers = append(opts.observers, o)
		}
	}
}

// joinObservers returns the one Observer that tells each of obs, nil when
// there is none.
func joinObservers(obs []Observer) Observer {
	switch len(obs) {
	case 0:
		return nil
	case 1:
		return obs[0]
	}
	return observers(obs)
}

type observers []Observer

func (os observers) ObserveDecision(ctx context.Context, e DecisionEvent) {
	for _, o := range os {
		o.ObserveDecision(ctx, e)
	}
}

func (os observers) ObserveOutcome(ctx context.Context, e OutcomeEvent) {
	for _, o := range os {
		o.ObserveOutcome(ctx, e)
	}
}

// observeBefore is Before with an Observer.
func (g *Gate) observeBefore(ctx context.Context, c Call, res *resumption, later *func() error) (Decision, error) {
	start := time.Now()
	d, err := g.before(ctx, c, start, res, later)
	g.observeDecision(ctx, c, d, err, start)
	return d, err
}

// observeDecision tells the Observer, if any, of the decision d about c
// (or the error err), made since start: Before's, or Unanswered's
// refusal.
func (g *Gate) observeDecision(ctx context.Context, c Call, d Decision, err error, start time.Time) {
	if g.obs == nil {
		return
	}
	e := DecisionEvent{Call: d.Call, Decision: d, Err: err, Start: start, Duration: time.Since(start)}
	if err != nil {
		e.Call = c
		if e.Call.Caller == "" {
			e.Call.Caller = c.Principal.Key()
		}
	}
	e.Budget, e.Metered = g.budget(e.Call.Caller)
	g.obs.ObserveDecision(ctx, e)
}

// observeAfter is After with an Observer.
func (g *Gate) observeAfter(ctx context.Context, c Call, r Result) (Outcome, error) {
	e := OutcomeEvent{Call: c, Failed: r.Err != nil, Reported: time.Now()}
	e.Outcome, e.Err = g.after(ctx, c, r, &e)
	e.Duration = time.Since(e.Reported)
	e.Budget, e.Metered = g.budget(c.Caller)
	g.obs.ObserveOutcome(ctx, e)
	return e.Outcome, e.Err
}

// open fills e from the open call After found.
func (e *OutcomeEvent) open(oc openCall) {
	e.Call.Tool = oc.tool
	if o := oc.obs; o != nil {
		e.Decision, e.Decided, e.Allowed = o.decision, o.started, o.allowed
		e.Call.Principal = o.decision.Call.Principal
	}
}

// budget returns the budget of the caller's live session, and false when
// it has none (never started, or let go).
func (g *Gate) budget(key string) (kernel.Budget, bool) {
	cl := g.acquire(key)
	if cl == nil {
		return kernel.Budget{}, false
	}
	defer g.release(cl)
	select {
	case <-cl.ready:
	default: // still starting: no budget to read yet
		return kernel.Budget{}, false
	}
	if cl.sess == nil {
		return kernel.Budget{}, false
	}
	if b, ok := g.periodBudget(cl); ok {
		return b, true
	}
	return cl.sess.Meter().Budget(), true
}

// Waiting returns how many approval requests wait for a human, of every
// caller: the length of Pending, without copying it.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.approvals)
}
