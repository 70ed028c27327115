package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// epoch is the time of a single-call case's call when it gives none, and
// a scenario's clock when it starts.
var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// singleCaller is the caller of a single-call case's calls.
const singleCaller = "policy-test"

// A Runner runs cases against one policy.
type Runner struct {
	policy   toolgate.Policy
	compiled *toolgate.Compiled
}

// NewRunner compiles p for its cases; an invalid policy is its error.
func NewRunner(p toolgate.Policy) (*Runner, error) {
	compiled, err := p.Compile()
	if err != nil {
		return nil, err
	}
	return &Runner{policy: p, compiled: compiled}, nil
}

// newGate is the one place a scenario's Gate is made from the policy:
// at a scenario's start and at each restart.
func (r *Runner) newGate(ctx context.Context, log *trace.Log, opts ...toolgate.Option) (*toolgate.Gate, error) {
	return toolgate.New(ctx, log, r.compiled, opts...)
}

// A Result is how a case ran: passed when Failures is empty.
type Result struct {
	Name     string
	Failures []Failure
}

// Passed reports whether the case ran as expected.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// A Failure is one step (or a single-call case's call) that did not do
// what was expected.
type Failure struct {
	// Step is the step's index in the scenario, -1 for a single-call
	// case; Name the step's name, if any; Event what the step was
	// ("call delete_file", "approve", "advance 10m", …).
	Step  int
	Name  string
	Event string
	// Problems say what differed, each "what, want what".
	Problems []string
	// Got is what the step did, in one line.
	Got string
}

// Where names the step: `step 3 "run" (call delete_file)`, or "" for a
// single-call case.
func (f Failure) Where() string {
	if f.Step < 0 {
		return ""
	}
	s := "step " + strconv.Itoa(f.Step)
	if f.Name != "" {
		s += " " + strconv.Quote(f.Name)
	}
	return s + " (" + f.Event + ")"
}

// Run runs c: a single-call case is decided by the policy's decision
// core (Compiled.Decide) after its history; a scenario is played step
// by step on a Gate over a memory log.
func (r *Runner) Run(ctx context.Context, c Case) Result {
	if !c.IsScenario() {
		return r.runCall(c.w)
	}
	return r.runScenario(ctx, c.w)
}

// runCall decides a single-call case's call after its session history:
// its labels, and the calls of before (in order, one second apart, each
// allowed one adding its labels and rate windows as the gate would).
func (r *Runner) runCall(c caseWire) Result {
	snap := toolgate.Snapshot{Labels: map[string]bool{}, Windows: map[string][]time.Time{}}
	for _, l := range c.Labels {
		snap.Labels[l] = true
	}
	for i, b := range c.Before {
		t := c.at.Add(-time.Duration(len(c.Before)-i) * time.Second)
		ru := r.compiled.Decide(snap, b.call(singleCaller), t)
		if ru.Verdict != toolgate.Allow {
			continue
		}
		for _, l := range ru.Labels {
			snap.Labels[l] = true
		}
		for _, w := range ru.Windows {
			snap.Windows[w.ID] = append(snap.Windows[w.ID], t)
		}
	}
	got := r.compiled.Decide(snap, c.call(singleCaller), c.at)
	out := Result{Name: c.Name}
	var p problems
	p.verdict(got.Verdict, &c.Expect)
	p.rule(got.Rule, c.Rule)
	p.str("condition", got.Condition, c.Condition)
	p.str("reason", got.Reason, c.Reason)
	p.explanation(got.Explanation, c.Explanation)
	if len(p) > 0 {
		out.Failures = []Failure{{Step: -1, Event: "call " + c.Tool, Problems: p,
			Got: fmt.Sprintf("got %s by %s, condition %s: %s", got.Verdict, got.Rule, got.Condition, got.Explanation)}}
	}
	return out
}

func (c callWire) call(caller string) toolgate.Call {
	out := toolgate.Call{Tool: c.Tool, Arguments: c.Arguments, Caller: caller}
	if c.ArgumentsText != nil {
		out.Arguments = []byte(*c.ArgumentsText)
	}
	if out.Arguments == nil {
		out.Arguments = []byte("{}")
	}
	if p := c.Principal; p != nil {
		out.Principal = p.principal()
	}
	return out
}

func (p *principalWire) principal() toolgate.Principal {
	return toolgate.Principal{Issuer: p.Issuer, Subject: p.Subject, Groups: p.Groups, Scopes: p.Scopes, Attributes: p.Attributes}
}

func (c *stepCall) call() toolgate.Call {
	out := c.callWire.call(c.Caller)
	out.ID = c.ID
	return out
}

// run is a scenario being played: the log's store, the gate over it,
// the clock, and what each named step decided.
type run struct {
	r         *Runner
	c         caseWire
	store     *trace.Memory
	log       *trace.Log
	gate      *toolgate.Gate
	now       time.Time
	ids       int
	decisions map[string]toolgate.Decision
}

func (s *run) clock() time.Time { return s.now }

func (s *run) newID() string { s.ids++; return "id-" + strconv.Itoa(s.ids) }

// open makes a Gate over a new Log on the scenario's store: at the start,
// and at each restart.
func (s *run) open(ctx context.Context) error {
	log, err := trace.NewLog(s.store, trace.WithClock(s.clock))
	if err != nil {
		return err
	}
	opts := []toolgate.Option{toolgate.WithClock(s.clock), toolgate.WithIDs(s.newID)}
	if s.c.DurableApprovals {
		opts = append(opts, toolgate.WithDurableApprovals())
	}
	if s.c.CallerLimit != nil {
		opts = append(opts, toolgate.WithCallerLimit(*s.c.CallerLimit))
	}
	if s.c.idle > 0 {
		opts = append(opts, toolgate.WithIdleCallers(s.c.idle))
	}
	g, err := s.r.newGate(ctx, log, opts...)
	if err != nil {
		return err
	}
	s.log, s.gate = log, g
	return nil
}

func (r *Runner) runScenario(ctx context.Context, c caseWire) Result {
	out := Result{Name: c.Name}
	s := &run{r: r, c: c, store: trace.NewMemory(), now: c.start, decisions: map[string]toolgate.Decision{}}
	if err := s.open(ctx); err != nil {
		out.Failures = append(out.Failures, Failure{Step: 0, Event: "start", Problems: []string{"the gate: " + err.Error()}})
		return out
	}
	for i, st := range c.Steps {
		f := s.step(ctx, i, st)
		if len(f.Problems) > 0 {
			out.Failures = append(out.Failures, f)
		}
		if s.gate == nil { // a restart failed: nothing more can run
			break
		}
	}
	return out
}

// got is what one step did.
type got struct {
	decision *toolgate.Decision
	outcome  *toolgate.Outcome
	approved *bool
	expired  *int
	caller   string
	err      error
	entries  []trace.Entry
}

// step plays st and checks what it did against its expectations.
func (s *run) step(ctx context.Context, i int, st *stepWire) Failure {
	f := Failure{Step: i, Name: st.Name}
	from := s.log.Head().Size
	var g got
	switch {
	case st.Call != nil:
		f.Event = "call " + st.Call.Tool
		d, err := s.gate.Before(ctx, st.Call.call())
		g.decision, g.err, g.caller = &d, err, d.Call.Caller
	case st.Resume != nil:
		f.Event = "resume " + st.Resume.Call.Tool
		rs := st.Resume
		var answer *toolgate.Answer
		if a := rs.Answer; a != nil {
			answer = &toolgate.Answer{Approved: a.Approved, Approver: a.Approver, Reason: a.Reason}
			if a.By != nil {
				p := a.By.principal()
				answer.By = &p
			}
		}
		d, err := s.gate.Resume(ctx, rs.Call.call(), s.requestID(rs.Request, rs.RequestID), answer)
		g.decision, g.err, g.caller = &d, err, d.Call.Caller
	case st.Approve != nil:
		f.Event = "approve"
		a := st.Approve
		id := s.requestID(a.Request, a.RequestID)
		var ok bool
		var err error
		if a.By != nil {
			ok, err = s.gate.ApproveAs(ctx, id, a.By.principal(), a.Reason)
		} else {
			ok, err = s.gate.Approve(ctx, id, approver(a.Approver), a.Reason)
		}
		g.approved, g.err, g.caller = &ok, err, s.decisions[a.Request].Call.Caller
	case st.Deny != nil:
		f.Event = "deny"
		a := st.Deny
		id := s.requestID(a.Request, a.RequestID)
		if a.By != nil {
			g.err = s.gate.DenyAs(ctx, id, a.By.principal(), a.Reason)
		} else {
			g.err = s.gate.Deny(ctx, id, approver(a.Approver), a.Reason)
		}
		g.caller = s.decisions[a.Request].Call.Caller
	case st.Declassify != nil:
		dw := st.Declassify
		f.Event = "declassify " + dw.Label
		var by *toolgate.Principal
		if dw.By != nil {
			p := dw.By.principal()
			by = &p
		}
		name := ""
		if by == nil {
			name = approver(dw.Approver)
		}
		g.err, g.caller = s.gate.Declassify(ctx, dw.Caller, dw.Label, name, by, dw.Reason), dw.Caller
	case st.Advance != nil:
		f.Event = "advance " + st.advance.String()
		s.now = s.now.Add(st.advance)
	case st.Expire != nil:
		f.Event = "expire"
		n, err := s.gate.ExpireApprovals(ctx)
		g.expired, g.err = &n, err
	case st.Unanswered != nil:
		f.Event = "unanswered " + st.Unanswered.Call
		d, err := s.gate.Unanswered(ctx, s.decisions[st.Unanswered.Call], st.Unanswered.waited)
		g.decision, g.err, g.caller = &d, err, d.Call.Caller
	case st.Result != nil:
		f.Event = "result " + st.Result.Call
		rw := st.Result
		call := s.decisions[rw.Call].Call
		res := toolgate.Result{Output: []byte(rw.Output)}
		if rw.Error != nil {
			res.Err = errors.New(*rw.Error)
		}
		if rw.Cost != nil {
			res.Actual, res.Measured = rw.cost, true
		}
		o, err := s.gate.After(ctx, call, res)
		if errors.Is(err, kernel.ErrOverrun) {
			err = nil // the outcome's Unpaid says it
		}
		g.outcome, g.err, g.caller = &o, err, call.Caller
	case st.Restart != nil:
		f.Event = "restart"
		s.gate = nil
		g.err = s.open(ctx)
	}
	if g.decision != nil && st.Name != "" {
		s.decisions[st.Name] = *g.decision
	}
	if s.log != nil {
		for e, err := range s.log.Entries(ctx, from) {
			if err != nil {
				g.err = errors.Join(g.err, err)
				break
			}
			g.entries = append(g.entries, e)
		}
	}
	f.Problems, f.Got = s.check(st.Expect, g)
	return f
}

// requestID is the id of the request a step names: the request the named
// step's decision asked (or "" when it asked none), or the id given.
func (s *run) requestID(step, id string) string {
	if step == "" {
		return id
	}
	if a := s.decisions[step].Approval; a != nil {
		return a.ID
	}
	return ""
}

// approver is an answer's approver: toolgate.DefaultApprover when none is
// named.
func approver(name string) string {
	if name == "" {
		return toolgate.DefaultApprover
	}
	return name
}

// check compares what a step did with what it expects, and says what it
// did in one line.
func (s *run) check(e *expectWire, g got) (problems, string) {
	if e == nil {
		e = &expectWire{}
	}
	var p problems
	reason := refusal(g.entries)
	switch {
	case g.err != nil && e.Error == nil:
		p.add("error %q, want none", g.err.Error())
	case e.Error != nil && g.err == nil:
		p.add("no error, want one containing %q", *e.Error)
	case e.Error != nil && !strings.Contains(g.err.Error(), *e.Error):
		p.add("error %q does not contain %q", g.err.Error(), *e.Error)
	}
	s.returned(&p, e, g, reason)
	s.after(&p, e, g)
	if e.Entries != nil {
		p = append(p, entriesDiffer(g.entries, s.resolve(e.Entries))...)
	}
	return p, describe(g, reason)
}

// returned checks what the step returned: its decision, answer,
// outcome or count, and the reason of the refusal it appended.
func (s *run) returned(p *problems, e *expectWire, g got, reason string) {
	if d := g.decision; d != nil {
		p.verdict(d.Verdict, e.Verdict)
		p.rule(d.Rule, e.Rule)
		p.str("condition", d.Condition, e.Condition)
		p.explanation(d.Explanation, e.Explanation)
		if e.Request != nil {
			want := s.requestID(*e.Request, "")
			if d.Approval == nil || d.Approval.ID != want {
				p.add("request %q, want %q's, %q", requestOf(d), *e.Request, want)
			}
		}
	} else {
		for _, m := range []struct {
			name string
			set  bool
		}{{"verdict", e.Verdict != nil}, {"rule", e.Rule != nil}, {"condition", e.Condition != nil},
			{"explanation", e.Explanation != nil}, {"request", e.Request != nil}} {
			if m.set {
				p.add("%s: the step makes no decision", m.name)
			}
		}
	}
	p.str("reason", reason, e.Reason)
	if e.Approved != nil {
		switch {
		case g.approved == nil:
			p.add("approved: the step is no approve")
		case *g.approved != *e.Approved:
			p.add("approved %t, want %t", *g.approved, *e.Approved)
		}
	}
	if e.Charged != nil || e.Unpaid != nil {
		switch o := g.outcome; {
		case o == nil:
			p.add("charged, unpaid: the step is no result")
		default:
			if e.Charged != nil && o.Charged != e.charged {
				p.add("charged %s, want %s", o.Charged, e.charged)
			}
			if e.Unpaid != nil && o.Unpaid != e.unpaid {
				p.add("unpaid %s, want %s", o.Unpaid, e.unpaid)
			}
		}
	}
	if e.Expired != nil {
		switch {
		case g.expired == nil:
			p.add("expired: the step is no expire")
		case *g.expired != *e.Expired:
			p.add("expired %d, want %d", *g.expired, *e.Expired)
		}
	}
}

// budgetLeft is what caller may still spend: in the current period
// (toolgate.Budgets, from the log) when the policy's budget renews, else
// what its kernel session has left.
func (s *run) budgetLeft(caller string) (kernel.Cost, bool) {
	if s.r.policy.BudgetPeriod == nil {
		m, ok := s.gate.Meter(caller)
		return m.Budget().Remaining(), ok
	}
	statuses, err := toolgate.Budgets(context.Background(), s.log, s.r.compiled, s.now)
	if err != nil {
		return 0, false
	}
	for _, st := range statuses {
		if st.Caller == caller {
			return st.Remaining, true
		}
	}
	return 0, false
}

// after checks the gate's state after the step: the requests waiting,
// a caller's budget, the callers held and let go.
func (s *run) after(p *problems, e *expectWire, g got) {
	if s.gate == nil {
		if e.Waiting != nil || e.Budget != nil || e.Callers != nil {
			p.add("waiting, budget, callers: no gate after a failed restart")
		}
		return
	}
	if e.Waiting != nil {
		if n := s.gate.Waiting(); n != *e.Waiting {
			p.add("waiting %d, want %d", n, *e.Waiting)
		}
	}
	if e.Budget != nil {
		caller := g.caller
		if e.Caller != nil {
			caller = *e.Caller
		}
		left, ok := s.budgetLeft(caller)
		switch {
		case !ok:
			p.add("budget: caller %q has made no call", caller)
		case left != e.budget:
			p.add("budget left %s for caller %q, want %s", left, caller, e.budget)
		}
	}
	if c := e.Callers; c != nil {
		live, evicted := s.gate.LiveCallers()
		if c.Live != nil && live != *c.Live {
			p.add("live callers %d, want %d", live, *c.Live)
		}
		if c.Evicted != nil && evicted != uint64(*c.Evicted) {
			p.add("callers let go %d, want %d", evicted, *c.Evicted)
		}
	}
}

// resolve replaces, in the expected entries, each {request STEP} with
// the id of the request the step asked and each {call STEP} with the id
// of its call.
func (s *run) resolve(entries []map[string]json.RawMessage) []map[string]json.RawMessage {
	out := make([]map[string]json.RawMessage, len(entries))
	for i, m := range entries {
		out[i] = make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			out[i][k] = placeholder.ReplaceAllFunc(v, func(ref []byte) []byte {
				sub := placeholder.FindSubmatch(ref)
				id := s.decisions[string(sub[2])].Call.ID
				if string(sub[1]) == "request" {
					id = s.requestID(string(sub[2]), "")
				}
				quoted, _ := json.Marshal(id)
				return quoted[1 : len(quoted)-1]
			})
		}
	}
	return out
}

func requestOf(d *toolgate.Decision) string {
	if d.Approval == nil {
		return ""
	}
	return d.Approval.ID
}

// refusal is the reason member of the refusal a step appended (a
// toolgate.refuse or toolgate.refuse_answer entry), "" when none.
func refusal(entries []trace.Entry) string {
	for _, e := range entries {
		if e.Kind != gatelog.KindRefuse && e.Kind != gatelog.KindRefuseAnswer {
			continue
		}
		var p struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(e.Payload, &p) == nil {
			return p.Reason
		}
	}
	return ""
}

// describe says what a step did in one line.
func describe(g got, reason string) string {
	var parts []string
	if d := g.decision; d != nil {
		s := fmt.Sprintf("%s by %s, condition %s", d.Verdict, d.Rule, d.Condition)
		if reason != "" {
			s += ", reason " + reason
		}
		if d.Explanation != "" {
			s += ": " + d.Explanation
		}
		parts = append(parts, s)
	}
	if g.approved != nil {
		parts = append(parts, fmt.Sprintf("approved %t", *g.approved))
	}
	if o := g.outcome; o != nil {
		parts = append(parts, fmt.Sprintf("charged %s, unpaid %s", o.Charged, o.Unpaid))
	}
	if g.expired != nil {
		parts = append(parts, fmt.Sprintf("expired %d", *g.expired))
	}
	if g.err != nil {
		parts = append(parts, "error "+strconv.Quote(g.err.Error()))
	}
	kinds := make([]string, len(g.entries))
	for i, e := range g.entries {
		kinds[i] = e.Kind
	}
	parts = append(parts, "entries ["+strings.Join(kinds, " ")+"]")
	return "got " + strings.Join(parts, "; ")
}

// entriesDiffer lists how the entries a step appended differ from those
// expected: their number, each one's kind, and each member given (an
// object's members are matched the same way, recursively; any other
// value must be equal as canonical JSON).
func entriesDiffer(entries []trace.Entry, want []map[string]json.RawMessage) []string {
	var out []string
	if len(entries) != len(want) {
		kinds := make([]string, len(entries))
		for i, e := range entries {
			kinds[i] = e.Kind
		}
		out = append(out, fmt.Sprintf("%d entries [%s], want %d", len(entries), strings.Join(kinds, " "), len(want)))
	}
	for i := range min(len(entries), len(want)) {
		e, w := entries[i], want[i]
		var kind string
		_ = json.Unmarshal(w["kind"], &kind) // checked by Parse
		if e.Kind != kind {
			out = append(out, fmt.Sprintf("entries[%d]: kind %s, want %s", i, e.Kind, kind))
			continue
		}
		rest := make(map[string]json.RawMessage, len(w))
		for k, v := range w {
			if k != "kind" {
				rest[k] = v
			}
		}
		for _, d := range differ("", rest, e.Payload) {
			out = append(out, fmt.Sprintf("entries[%d] (%s): %s", i, kind, d))
		}
	}
	return out
}

// differ matches the members of want against the JSON object got; at is
// the path so far ("/approval").
func differ(at string, want map[string]json.RawMessage, got []byte) []string {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(got, &members); err != nil || members == nil {
		return []string{fmt.Sprintf("%s: %s is not an object", orRoot(at), abbreviate(got))}
	}
	var out []string
	for _, k := range sortedKeys(want) {
		w := want[k]
		p := at + "/" + k
		g, ok := members[k]
		if !ok {
			out = append(out, fmt.Sprintf("%s missing, want %s", p, abbreviate(w)))
			continue
		}
		if bytes.HasPrefix(bytes.TrimSpace(w), []byte("{")) {
			var sub map[string]json.RawMessage
			if json.Unmarshal(w, &sub) == nil {
				out = append(out, differ(p, sub, g)...)
				continue
			}
		}
		cw, errW := canon.Transform(w)
		cg, errG := canon.Transform(g)
		if errW != nil || errG != nil || !bytes.Equal(cw, cg) {
			out = append(out, fmt.Sprintf("%s %s, want %s", p, abbreviate(g), abbreviate(w)))
		}
	}
	return out
}

func orRoot(at string) string {
	if at == "" {
		return "the payload"
	}
	return at
}

// abbreviate shows a JSON value in at most 120 bytes.
func abbreviate(v []byte) string {
	c, err := canon.Transform(v)
	if err != nil {
		c = v
	}
	if len(c) > 120 {
		return string(c[:117]) + "..."
	}
	return string(c)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// problems is what differed in one step.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p *problems) verdict(v toolgate.Verdict, want *string) {
	if want != nil && v.String() != *want {
		p.add("verdict %s, want %s", v, *want)
	}
}

func (p *problems) rule(r toolgate.RuleRef, want *string) {
	if want != nil && !sameRule(r, *want) {
		p.add("rule %s, want %s", r, *want)
	}
}

func (p *problems) str(name, v string, want *string) {
	if want != nil && v != *want {
		p.add("%s %q, want %q", name, v, *want)
	}
}

func (p *problems) explanation(v string, want *string) {
	if want != nil && !strings.Contains(v, *want) {
		p.add("explanation %q does not contain %q", v, *want)
	}
}

// sameRule reports whether want ("none", "default", "#index" or a name)
// names r.
func sameRule(r toolgate.RuleRef, want string) bool {
	switch {
	case want == "none":
		return !r.Found
	case !r.Found:
		return false
	case want == "default":
		return r.Index < 0
	case strings.HasPrefix(want, "#"):
		i, err := strconv.Atoi(want[1:])
		return err == nil && r.Index >= 0 && i == r.Index
	}
	return r.Name == want
}
