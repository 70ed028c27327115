package toolgate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// This file is a call's life, for one caller: what the gate holds of it
// (life), the events that change it and what the gate does next. None
// of it locks, reads a clock, writes or waits: time and everything the
// gate learns are inputs, and what to do is a value. Gate is the shell:
// it locks the caller, steps, performs the effects and applies what it
// recorded (gate.go, answer.go, held.go, result.go).
//
// Events, and the effects the shell performs for them:
//
//   - a call arrives, with its Ruling and its time: arrive plans a step —
//     record a refusal (gatelog.KindRefuse) or an answer's (gatelog.KindRefuseAnswer),
//     answer with a request already waiting, ask (a claims evaluation,
//     gatelog.KindAsk, AskApproval), record an answer Resume brought (a claims
//     approval) and arrive again, or run: consult the shared windows and
//     have the kernel session execute or reserve it;
//   - the kernel executed or reserved it: applyExecuted; rejected it, or
//     a shared window did: rejected;
//   - an answer arrives: answerable, then the claims approval recorded is
//     applied (applyApproval), or the refusal recorded;
//   - time passes: due says what expired (the gatelog.KindExpire entries to
//     write), applyExpire what that changes;
//   - the tool returned or failed (After): leave closes the call, ended
//     says what the kernel session settles or refunds (reopen when
//     nothing could be recorded);
//   - a caller is let go when its life holds nothing (holds), and resumed
//     by replaying its entries (replayEntry).
//
// The state changes only by applying what the log records (or, for a
// call, what arrive reserves while the kernel decides): the live gate
// applies the typed entry it has just written, and a gate restarted over
// its log, or a caller let go and back, decodes the caller's entries and
// applies them through the same functions (replayEntry). A restart is
// therefore a replay of the same lifecycle over the log.
//
// Two things are not on the log and are not restored: a call allowed
// before a restart is not open after it (After reports ErrUnknownCall;
// its charge stands as recorded), and without WithDurableApprovals a
// request asked before a restart is not restored (the call asks again:
// fail closed).
//
// The functions change the life they are given in place, as raft's
// state machine does, under the caller's lock; an approval a life holds
// is never changed once held (an answer makes a new one), so that the
// gate's index of waiting requests may share it. A call's life:
//
//	arrive ─ refused ─────────────────────────────── gatelog.KindRefuse
//	       ├ asks a human ── evaluate, ask ─ waiting  claims.evaluate, gatelog.KindAsk
//	       │      answer ── approved, denied, or waits claims.approve
//	       │      ttl ───── expired                   gatelog.KindExpire
//	       ├ answer refused ────────────────────────── gatelog.KindRefuseAnswer
//	       └ runs ── kernel ─ executed (open) ──────── kernel.execute / reserve
//	                        └ rejected ─────────────── kernel.reject
//	leave (After) ─ settled, refunded ── closed ────── kernel.settle / refund, gatelog.KindResult

// life is one caller's lifecycle state. Labels and windows are the
// core's Snapshot; the rest is the calls and approvals in flight.
type life struct {
	labels  map[string]bool
	until   map[string]time.Time   // of labels that end (Rule.LabelTTL): when they leave labels
	windows map[string][]time.Time // by window id, ascending
	open    map[string]openCall    // by call id; an empty one is reserved while the kernel decides
	waiting map[callKey]*approval  // the request a call waits on; never changed once held (copy on write)
	granted map[callKey][]string   // approval ids not yet used
	denied  map[callKey][]denial   // denials not yet reported
	expires map[string]time.Time   // by request id, with Config.ApprovalTTL: when it, or its answer, expires
	evals   map[string]evaluation  // claims evaluations no request names yet, by bundle id
	budget  *budgetLedger          // the spend of the periods still counted, when the budget renews (budget_period.go)
	// convs are the labels of each conversation, under
	// Policy.ConversationLabels; labels and until are those attached with
	// no conversation (and every label without it).
	convs map[string]*labelSet
}

// labelSet is the labels one conversation carries, as life's labels and
// until are the caller's.
type labelSet struct {
	labels map[string]bool
	until  map[string]time.Time
}

// maxConversations bounds how many conversations of one caller carry
// labels of their own: the labels of further ones are attached
// caller-wide (Policy.ConversationLabels).
const maxConversations = 1024

// conversationTagPrefix tags the execution of a call made in a
// conversation, under Policy.ConversationLabels: the handle follows.
const conversationTagPrefix = "conversation:"

func newLife() life {
	return life{labels: map[string]bool{}, until: map[string]time.Time{}, windows: map[string][]time.Time{}, open: map[string]openCall{},
		waiting: map[callKey]*approval{}, granted: map[callKey][]string{}, denied: map[callKey][]denial{},
		expires: map[string]time.Time{}, evals: map[string]evaluation{}}
}

// callKey is what an approval is bound to, besides the caller: the tool,
// the arguments and the tier asked at, so that an approval by the
// approvers of one tier never answers for those of another.
type callKey struct {
	tool, digest string
	tier         claims.RiskTier
}

type openCall struct {
	execID   string
	tool     string
	rule     *compiledRule
	cost     kernel.Cost
	reserved bool
	obs      *observed // the allow, when the gate has an Observer
	// definition is the pinned definition hash the call ran against
	// (Call.Definition), for its result entry.
	definition string
	// trace is the call's trace id (Call.Trace), for its result entry.
	trace string
}

type denial struct{ id, approver, reason string }

// An approval is never changed once a life holds it: an answer makes a
// new one (copy on write), so that Pending reads it under Gate.mu alone.
type approval struct {
	req    ApprovalRequest
	key    callKey
	bundle claims.ClaimBundle // as its last evaluation returned it
	seq    uint64             // the claims evaluation that made the request
	by     map[string]bool    // the keys of the principals who answered (answeredBy)
}

// holds reports whether the life holds anything a call or a human will
// still need: a caller that does is never let go.
func (l *life) holds() bool {
	return len(l.open) != 0 || len(l.waiting) != 0 || len(l.granted) != 0 || len(l.denied) != 0
}

// evaluation is a claims evaluation of an approval request's bundle.
type evaluation struct {
	bundle claims.ClaimBundle
	seq    uint64
}

// indexChange is what an applied entry changed of the gate's index of
// waiting requests (Gate.approvals): put is a request now waiting (new,
// or answered by some of its approvers), gone the id of one no longer
// waiting.
type indexChange struct {
	put  *approval
	gone string
}

// executed is a kernel execution or reservation of the caller's session:
// the one the live gate has just recorded, or one replay read.
type executed struct {
	callID   string    // its "call:" tag
	approval string    // its "approval:" tag, "" without
	at       time.Time // when the decision was made
	labels   []string
	labelTTL time.Duration // how long labels last from at; 0: for good
	conv     string        // the conversation that carries the labels, "" for the caller
	windows  []Window      // ID and Per
	open     openCall
}

// applyExecuted: the call counts in its windows, its labels are seen,
// the approval it ran on is used, and it is open until its result.
func (l *life) applyExecuted(x executed) {
	for _, w := range x.windows {
		l.windows[w.ID] = addTime(l.windows[w.ID], x.at, w.Per)
	}
	forgetEnded(l.labels, l.until, x.at) // forgotten, as replay forgets them here too
	for c, s := range l.convs {
		if forgetEnded(s.labels, s.until, x.at); len(s.labels) == 0 {
			delete(l.convs, c)
		}
	}
	labels, until := l.labels, l.until
	if x.conv != "" && len(x.labels) > 0 {
		s := l.convs[x.conv]
		if s == nil && len(l.convs) < maxConversations {
			if l.convs == nil {
				l.convs = map[string]*labelSet{}
			}
			s = &labelSet{labels: map[string]bool{}, until: map[string]time.Time{}}
			l.convs[x.conv] = s
		}
		if s != nil {
			labels, until = s.labels, s.until
		}
	}
	for _, lb := range x.labels {
		attach(labels, until, lb, x.at, x.labelTTL)
	}
	if x.approval != "" {
		delete(l.expires, x.approval)
		for k, ids := range l.granted {
			if i := slices.Index(ids, x.approval); i >= 0 {
				l.dropGrant(k, i)
				break
			}
		}
	}
	l.open[x.callID] = x.open
	if l.budget != nil {
		l.budget.add(x.at, x.open.execID, x.open.cost, x.open.reserved)
	}
}

// labelTTLTagPrefix tags an execution whose labels end: its rule's
// LabelTTL follows, as time.Duration.String writes it.
const labelTTLTagPrefix = "label_ttl:"

// forgetEnded drops from labels the ones that ended at or before at.
func forgetEnded(labels map[string]bool, until map[string]time.Time, at time.Time) {
	for lb, end := range until {
		if !at.Before(end) {
			delete(labels, lb)
			delete(until, lb)
		}
	}
}

// attach: labels carry label lb from at, for ttl (0: for good). A label
// already carried for good stays so; one that ends ends at the later of
// its two ends.
func attach(labels map[string]bool, until map[string]time.Time, lb string, at time.Time, ttl time.Duration) {
	end, ends := until[lb]
	switch {
	case ttl <= 0:
		delete(until, lb)
	case labels[lb] && !ends:
		// for good already
	case !ends || at.Add(ttl).After(end):
		until[lb] = at.Add(ttl)
	}
	labels[lb] = true
}

// labelsAt is the labels a call in conversation conv ("" for none) sees
// at now: those attached with no conversation and those of conv, less
// those that ended at or before now (exactly ttl after the recorded
// time). It is l.labels itself when that is all of them.
func (l *life) labelsAt(conv string, now time.Time) map[string]bool {
	var s *labelSet
	if conv != "" {
		s = l.convs[conv]
	}
	if len(l.until) == 0 && s == nil {
		return l.labels
	}
	out := make(map[string]bool, len(l.labels))
	carried(out, l.labels, l.until, now)
	if s != nil {
		carried(out, s.labels, s.until, now)
	}
	return out
}

// carried adds to out the labels still carried at now.
func carried(out, labels map[string]bool, until map[string]time.Time, now time.Time) {
	for lb := range labels {
		if end, ends := until[lb]; !ends || now.Before(end) {
			out[lb] = true
		}
	}
}

// carries reports whether any conversation of the caller, or the caller,
// carries label lb at now.
func (l *life) carries(lb string, now time.Time) bool {
	if l.labelsAt("", now)[lb] {
		return true
	}
	for c := range l.convs {
		if l.labelsAt(c, now)[lb] {
			return true
		}
	}
	return false
}

// declassify: an approver cleared label lb (gatelog.Declassify), from
// the caller and every conversation of it.
func (l *life) declassify(lb string) {
	delete(l.labels, lb)
	delete(l.until, lb)
	for c, s := range l.convs {
		delete(s.labels, lb)
		delete(s.until, lb)
		if len(s.labels) == 0 {
			delete(l.convs, c)
		}
	}
}

// addTime returns the times of a window (ascending) with at added, and
// without those a window of length per no longer counts from at. A
// caller rebuilt from the log adds its times the same way, so that it
// keeps exactly what the gate before it kept.
func addTime(ts []time.Time, at time.Time, per time.Duration) []time.Time {
	// Keep only what a window of this length can still count.
	from := at.Add(-per)
	k := 0
	for k < len(ts) && !ts[k].After(from) {
		k++
	}
	ts = ts[k:]
	// In time order even when the clock stepped back.
	i := len(ts)
	for i > 0 && ts[i-1].After(at) {
		i--
	}
	return slices.Insert(ts, i, at)
}

// applyRefuse: a call refused with a denial used it.
func (l *life) applyRefuse(r gatelog.Refuse) {
	if r.Reason != "denied" || r.Approval == "" {
		return
	}
	delete(l.expires, r.Approval)
	for k, ds := range l.denied {
		if i := slices.IndexFunc(ds, func(d denial) bool { return d.id == r.Approval }); i >= 0 {
			l.dropDenial(k, i)
			return
		}
	}
}

// applyEvaluation: a request's bundle was evaluated; a request (gatelog.KindAsk)
// names it next.
func (l *life) applyEvaluation(b claims.ClaimBundle, seq uint64) {
	l.evals[b.ID] = evaluation{bundle: b, seq: seq}
}

// applyAsk: the request a names waits for a human, with the evaluation
// that made it; with ttl > 0 (the policy's now, whatever it was asked
// under) it expires ttl after it was asked.
func (l *life) applyAsk(a gatelog.Ask, ttl time.Duration) indexChange {
	ev, ok := l.evals[a.Approval]
	if !ok {
		return indexChange{} // no evaluation: nothing a human could answer
	}
	delete(l.evals, a.Approval)
	key := callKey{tool: a.Tool, digest: a.ArgumentsSHA256, tier: a.Tier}
	if _, dup := l.waiting[key]; dup || !waits(ev.bundle.Decision) {
		return indexChange{}
	}
	var expires time.Time
	if ttl > 0 {
		expires = a.Asked.Add(ttl)
		l.expires[a.Approval] = expires
	}
	ap := &approval{key: key, bundle: ev.bundle, seq: ev.seq, req: ApprovalRequest{ID: a.Approval, Caller: a.Caller,
		Principal: a.Principal, Tool: a.Tool, ArgumentsDigest: a.ArgumentsSHA256, Tier: a.Tier,
		Awaiting: awaitingOf(ev.bundle), Question: a.Question, Arguments: a.Arguments,
		Asked: a.Asked, Expires: expires}}
	ap.by = answeredByAll(ev.bundle)
	l.waiting[key] = ap
	return indexChange{put: ap}
}

// waits reports whether a bundle decided d waits for approvers.
func waits(d claims.Decision) bool {
	return d == claims.DecisionDefer || d == claims.DecisionEscalate
}

// applyApproval: an approver answered the request b names. It waits for
// the others still, or is approved (used by the next call of exactly its
// key), or denied (reported to the next one).
func (l *life) applyApproval(b claims.ClaimBundle) indexChange {
	var ap *approval
	for _, w := range l.waiting {
		if w.req.ID == b.ID {
			ap = w
			break
		}
	}
	if ap == nil {
		return indexChange{}
	}
	if waits(b.Decision) {
		next := *ap
		next.bundle = b
		next.req.Awaiting = awaitingOf(b)
		next.by = answeredByAll(b)
		l.waiting[ap.key] = &next
		return indexChange{put: &next}
	}
	delete(l.waiting, ap.key)
	if b.Decision == claims.DecisionPublish {
		l.granted[ap.key] = append(l.granted[ap.key], b.ID)
	} else {
		dn := denial{id: b.ID}
		if hs := b.AuditTrail.HumanApprovals; len(hs) > 0 {
			dn.approver, dn.reason = hs[len(hs)-1].Approver, hs[len(hs)-1].Reason
		}
		l.denied[ap.key] = append(l.denied[ap.key], dn)
	}
	return indexChange{gone: b.ID}
}

// answeredByAll is the set of the principals who answered b (answeredBy).
func answeredByAll(b claims.ClaimBundle) map[string]bool {
	hs := b.AuditTrail.HumanApprovals
	if len(hs) == 0 {
		return nil
	}
	by := make(map[string]bool, len(hs))
	for _, h := range hs {
		by[baseName(b.RequiredApprovals, answeredBy(h))] = true
	}
	return by
}

// applyExpire: a request, approval or denial expired unused.
func (l *life) applyExpire(x gatelog.Expire) indexChange {
	key := callKey{tool: x.Tool, digest: x.ArgumentsSHA256, tier: x.Tier}
	delete(l.expires, x.Approval)
	switch x.State {
	case "waiting":
		if ap, ok := l.waiting[key]; ok && ap.req.ID == x.Approval {
			delete(l.waiting, key)
			return indexChange{gone: x.Approval}
		}
	case "approved":
		if i := slices.Index(l.granted[key], x.Approval); i >= 0 {
			l.dropGrant(key, i)
		}
	case "denied":
		if i := slices.IndexFunc(l.denied[key], func(d denial) bool { return d.id == x.Approval }); i >= 0 {
			l.dropDenial(key, i)
		}
	}
	return indexChange{}
}

func (l *life) dropGrant(k callKey, i int) {
	if ids := slices.Delete(l.granted[k], i, i+1); len(ids) > 0 {
		l.granted[k] = ids
	} else {
		delete(l.granted, k)
	}
}

func (l *life) dropDenial(k callKey, i int) {
	if ds := slices.Delete(l.denied[k], i, i+1); len(ds) > 0 {
		l.denied[k] = ds
	} else {
		delete(l.denied, k)
	}
}

// due returns what expires at now — for the call key only when key is
// not nil — as the entries that record it, oldest request first (ids
// are UUIDv7s, by time). ttl is Config.ApprovalTTL; 0 expires nothing.
func (l *life) due(caller string, now time.Time, ttl time.Duration, key *callKey) []gatelog.Expire {
	if ttl <= 0 || len(l.expires) == 0 {
		return nil
	}
	var out []gatelog.Expire
	add := func(id, state string, k callKey) {
		if key != nil && k != *key {
			return
		}
		if exp, ok := l.expires[id]; ok && !exp.IsZero() && !now.Before(exp) {
			out = append(out, gatelog.Expire{Approval: id, Session: SessionPrefix + caller, Caller: caller, Tool: k.tool,
				ArgumentsSHA256: k.digest, Tier: k.tier, State: state, Asked: exp.Add(-ttl), Expires: exp})
		}
	}
	for k, ap := range l.waiting {
		add(ap.req.ID, "waiting", k)
	}
	for k, ids := range l.granted {
		for _, id := range ids {
			add(id, "approved", k)
		}
	}
	for k, ds := range l.denied {
		for _, d := range ds {
			add(d.id, "denied", k)
		}
	}
	slices.SortFunc(out, func(a, b gatelog.Expire) int { return strings.Compare(a.Approval, b.Approval) })
	return out
}

// arrival is a call arriving once the core ruled it is not refused: the
// event arrive steps on.
type arrival struct {
	call Call
	// The ruling's verdict (Allow or AskApproval), rule and explanation.
	verdict     Verdict
	rule        RuleRef
	explanation string
	key         callKey     // what an approval is bound to, when the ruling asks
	res         *resumption // Resume's request and answer; nil for Before
	// asked is the gate's waiting request res.request names, of any
	// caller; nil when none waits.
	asked      *approval
	maxWaiting int // Config.MaxWaiting
}

// step is what the shell does next for an arriving call.
type step int

const (
	stepRun          step = iota // shared windows, then the kernel (plan.approval: the approval it runs on)
	stepRefuse                   // record a gatelog.KindRefuse (reason, why, approval)
	stepRefuseAnswer             // record plan.refusal (gatelog.KindRefuseAnswer) and refuse the call
	stepWait                     // answer AskApproval with plan.waiting, asked already
	stepAsk                      // evaluate a new request (plan.question, plan.shown), record it and answer AskApproval
	stepAnswer                   // record plan.answer to plan.waiting, then arrive again without it
)

// plan is arrive's answer.
type plan struct {
	step      step
	condition string // the Decision's Condition, when not the ruling's
	reason    string // a refusal's reason
	why       string // a refusal's explanation
	approval  string // the approval the call runs on, or the request a refusal names
	waiting   *approval
	refusal   *gatelog.RefuseAnswer
	shown     string // the arguments as a human is shown them
	question  string
	answer    *answerPlan
}

// answerPlan is an answer to record: approver's decision with reason;
// by, when not nil, the principal answering.
type answerPlan struct {
	approver string
	decision claims.ApprovalDecision
	reason   string
	by       *Principal
}

// arrive steps a call in: a call id already open is refused; one that
// needs no human is reserved (open, empty) and runs; one that needs a
// human is refused with a denial not yet reported, runs on an approval
// not yet used (taking it), waits on its request, or makes one; Resume's
// answer is checked against the question the gate asked and recorded
// (stepAnswer), or refused. A reserved call is released by rejected.
func (l *life) arrive(a arrival) plan {
	c := &a.call
	if _, dup := l.open[c.ID]; dup {
		return plan{step: stepRefuse, condition: "call_id", reason: "duplicate_call", why: fmt.Sprintf("call id %q is already running", c.ID)}
	}
	if a.res != nil && a.verdict != AskApproval && (a.res.request != "" || a.res.answer != nil) {
		// An answer for a call that needs no human answers no question.
		return plan{step: stepRefuseAnswer, condition: gatelog.ConditionAnswer,
			refusal: refusalOf(c, a.res, gatelog.AnswerOtherCall, fmt.Sprintf(
				"tool %q: the call needs no approval, so the answer is to a question about another call; this call is not run", c.Tool)),
			why: fmt.Sprintf("tool %q: the answer is to a question about another call; this call is not run", c.Tool)}
	}
	var approvalID string
	switch {
	case a.verdict == AskApproval && a.res != nil:
		p, run := l.resume(a)
		if !run {
			return p
		}
		approvalID = p.approval
	case a.verdict == AskApproval:
		if ds := l.denied[a.key]; len(ds) > 0 {
			return deniedPlan(c, a.rule, a.key.tier, ds[0])
		}
		ids := l.granted[a.key]
		if len(ids) == 0 {
			return l.ask(a)
		}
		approvalID = ids[0]
		l.dropGrant(a.key, 0)
	}
	l.open[c.ID] = openCall{}
	return plan{step: stepRun, approval: approvalID}
}

// rejected releases what arrive reserved for a call that did not run:
// its id, and the approval it was to run on, which the call's next
// attempt uses.
func (l *life) rejected(callID string, key callKey, approvalID string) {
	delete(l.open, callID)
	if approvalID != "" {
		l.granted[key] = append([]string{approvalID}, l.granted[key]...)
	}
}

func deniedPlan(c *Call, rule RuleRef, tier claims.RiskTier, dn denial) plan {
	why := fmt.Sprintf("tool %q (%s, approval): %s denied by %s", c.Tool, rule, tier, dn.approver)
	if dn.reason != "" {
		why += ": " + dn.reason
	}
	return plan{step: stepRefuse, condition: "approval", reason: "denied", why: why, approval: dn.id}
}

// ask is arrive for a call that needs a human and has no answer yet.
func (l *life) ask(a arrival) plan {
	c, tier := &a.call, a.key.tier
	if ap, ok := l.waiting[a.key]; ok {
		return plan{step: stepWait, waiting: ap}
	}
	if a.maxWaiting > 0 && len(l.waiting) >= a.maxWaiting {
		return plan{step: stepRefuse, condition: "approval", reason: "too_many_waiting",
			why: fmt.Sprintf("tool %q (%s, approval): %s: %d calls of this caller already wait for a human", c.Tool, a.rule, tier, len(l.waiting))}
	}
	shown, err := showArguments(c.Arguments)
	if err != nil {
		return plan{step: stepRefuse, condition: "approval", reason: "unshowable_arguments",
			why: fmt.Sprintf("tool %q (%s, approval): %s needs a human's approval: %v", c.Tool, a.rule, tier, err)}
	}
	question := fmt.Sprintf("Allow the %s tool call %q with arguments %s?", tier, c.Tool, shown)
	if a.explanation != "" { // a flow asks: say why
		question = fmt.Sprintf("Allow the %s tool call %q with arguments %s (%s: %s)?", tier, c.Tool, shown, a.rule, a.explanation)
	}
	return plan{step: stepAsk, shown: shown, question: OneLine(question)}
}

// resume is arrive for a call Resume brings back that needs a human: it
// reports run with the approval the call runs on, or the plan that
// decides it otherwise.
func (l *life) resume(a arrival) (p plan, run bool) {
	c, res, key := &a.call, a.res, a.key
	refuse := func(reason, why string, waiting *approval) (plan, bool) {
		return plan{step: stepRefuseAnswer, condition: gatelog.ConditionAnswer, refusal: refusalOf(c, res, reason, why), why: why, waiting: waiting}, false
	}
	if res.request == "" {
		return refuse(gatelog.AnswerUnasked, fmt.Sprintf("tool %q (%s, approval): %s needs a human's approval and no question was asked for this call; make the call again to ask",
			c.Tool, a.rule, key.tier), l.waiting[key])
	}
	if ap := a.asked; ap != nil {
		if ap.req.Caller != c.Caller || ap.key != key || l.waiting[key] != ap {
			return refuse(gatelog.AnswerOtherCall, fmt.Sprintf("tool %q: the answer is to a question about another call (%s); this call is not run, and that question still waits",
				c.Tool, ap.req.Question), l.waiting[key])
		}
		an := res.answer
		if an == nil { // the question still waits
			return plan{step: stepWait, waiting: ap}, false
		}
		ans := &answerPlan{approver: an.Approver, by: an.By, decision: claims.ApprovalRejected, reason: an.Reason}
		if an.Approved {
			ans.decision = claims.ApprovalApproved
		}
		if an.By != nil {
			name, err := ap.answersFor(*an.By)
			if err != nil {
				return refuse(gatelog.AnswerNotApprover, fmt.Sprintf("tool %q: %v", c.Tool, err), ap)
			}
			ans.approver, ans.reason = name, asReason(*an.By, name, an.Reason)
		}
		return plan{step: stepAnswer, waiting: ap, answer: ans}, false
	}
	if i := slices.IndexFunc(l.denied[key], func(dn denial) bool { return dn.id == res.request }); i >= 0 {
		return deniedPlan(c, a.rule, key.tier, l.denied[key][i]), false
	}
	if i := slices.Index(l.granted[key], res.request); i >= 0 {
		if an := res.answer; an != nil && !an.Approved {
			return refuse(gatelog.AnswerDecided, fmt.Sprintf("tool %q: its request was approved already; this denial came after and was not recorded, and the call is not run", c.Tool), nil)
		}
		l.dropGrant(key, i)
		return plan{approval: res.request}, true
	}
	return refuse(gatelog.AnswerUnasked, fmt.Sprintf("tool %q: the answer is to no question waiting for this call (answered and used already, or never asked); make the call again to ask",
		c.Tool), l.waiting[key])
}

// answersFor returns the approver name p answers for in ap: for a k-of-n
// group, the first of its slots still open (quorum.go).
func (ap *approval) answersFor(p Principal) (string, error) {
	key := p.Key()
	for _, name := range ap.req.Awaiting {
		if key != "" && name == key {
			return ap.slotFor(name), nil
		}
		if group, isGroup := strings.CutPrefix(name, GroupPrefix); isGroup && slices.Contains(p.Groups, group) {
			return ap.slotFor(name), nil
		}
	}
	return "", fmt.Errorf("%w: %q waits for %s, and %q is none of them", ErrNotAnApprover, ap.req.ID, strings.Join(ap.req.Awaiting, ", "), key)
}

// slotFor is the claims approver name an answer for the approver name
// records: the first open slot of a k-of-n group, else name itself.
func (ap *approval) slotFor(name string) string {
	base, ok := slotsOf(ap.bundle.RequiredApprovals)
	if !ok || base != name {
		return name
	}
	for _, slot := range (claims.Pending{Bundle: ap.bundle}).Awaiting() {
		return slot
	}
	return name
}

// answerable checks an answer to ap before it is recorded: ap must still
// wait, a principal answers once, and a call's own principal approves a
// PRIVILEGE call only when self is set (Config.SelfApproval).
func (l *life) answerable(ap *approval, ans *answerPlan, self bool) error {
	id := ap.req.ID
	if l.waiting[ap.key] != ap {
		return fmt.Errorf("%w: %q was decided already", ErrUnknownApproval, id)
	}
	// Who answers: a principal by its key, else the approver name (of
	// a k-of-n group: the group's, whichever slot it fills).
	who := baseName(ap.bundle.RequiredApprovals, ans.approver)
	if ans.by != nil {
		who = ans.by.Key()
	}
	_, quorum := slotsOf(ap.bundle.RequiredApprovals)
	if (ans.by != nil || quorum) && ap.by[who] {
		return fmt.Errorf("%w: %q answered %q already (%w)", ErrNotAnApprover, who, id, errAnsweredAlready)
	}
	if ans.decision == claims.ApprovalApproved && !self && ap.key.tier == claims.TierPrivilege {
		if who != "" && (who == ap.req.Principal || who == ap.req.Caller) {
			return fmt.Errorf("%w: %q made the call %q asks about", ErrSelfApproval, who, id)
		}
	}
	return nil
}

// leave closes the open call id for After: ok is false when it is not
// open (or only reserved). A settlement that was not recorded puts it
// back (reopen). Replay needs no result entry: no call is open after it.
func (l *life) leave(id string) (oc openCall, ok bool) {
	oc, ok = l.open[id]
	if !ok || oc.execID == "" {
		return openCall{}, false
	}
	delete(l.open, id)
	return oc, true
}

func (l *life) reopen(id string, oc openCall) { l.open[id] = oc }

// ending is what the kernel session records for a call that ended: a
// reservation settled at actual, or a fixed-cost call refunded refund
// (why), or nothing.
type ending struct {
	settle bool
	actual kernel.Cost
	refund kernel.Cost
	why    string
}

// ended is the event of After — the tool returned, or failed — for the
// call leave took out: a reservation is settled at the measured cost,
// else at its reservation; a fixed-cost call measured below its cost is
// refunded the difference; under RefundOnError a failed call costs
// nothing. refundOnError is the call's rule's.
func ended(oc openCall, r Result, refundOnError bool) ending {
	failed := r.Err != nil
	if oc.reserved {
		e := ending{settle: true, actual: oc.cost}
		if r.Measured {
			e.actual = r.Actual
		}
		if failed && refundOnError {
			e.actual = 0
		}
		return e
	}
	switch {
	case failed && refundOnError:
		return ending{refund: oc.cost, why: "the tool failed"}
	case r.Measured && r.Actual < oc.cost:
		return ending{refund: oc.cost - r.Actual, why: "measured cost " + r.Actual.String()}
	}
	return ending{}
}

// replayEntry decodes e and applies it to the life of its session (get
// returns nil for a session not replayed).
func replayEntry(e trace.Entry, get func(string) *life, owner map[string]*life, evals map[string]evaluation,
	per map[string]time.Duration, ttl time.Duration, durable bool) error {
	switch e.Kind {
	case kernel.KindExecute, kernel.KindReserve:
		d, err := kernel.DecodeEntry(e)
		if err != nil {
			return err
		}
		var rec kernel.Record
		var session string
		switch x := d.(type) {
		case kernel.ExecuteEntry:
			rec, session = x.Record, x.Session
		case kernel.ReserveEntry:
			rec, session = x.Record, x.Session
		}
		if l := get(session); l != nil {
			x := executedOf(rec, e.Kind == kernel.KindReserve, per)
			l.applyExecuted(x)
			// Not open after a restart (see the top of this file): its
			// result, if any, need not be read either.
			delete(l.open, x.callID)
		}
	case gatelog.KindRefuse:
		if !durable { // only a denial used changes a life
			return nil
		}
		d, err := gatelog.Decode(e)
		if err != nil {
			return err
		}
		if x, ok := d.(gatelog.Refuse); ok {
			if l := get(x.Session); l != nil {
				l.applyRefuse(x)
			}
		}
	case claims.KindEvaluate, claims.KindApprove:
		if !durable {
			return nil
		}
		rec, err := claims.DecodeRecord(e.Payload)
		if err != nil {
			return err
		}
		if e.Kind == claims.KindEvaluate {
			// Recorded before the request names it (gatelog.KindAsk).
			evals[rec.Bundle.ID] = evaluation{bundle: rec.Bundle, seq: e.Seq}
		} else if l := owner[rec.Bundle.ID]; l != nil {
			l.applyApproval(rec.Bundle)
		}
	case gatelog.KindAsk:
		if !durable {
			return nil
		}
		var a gatelog.Ask
		if err := strictJSON(e.Payload, &a); err != nil {
			return err
		}
		ev, ok := evals[a.Approval]
		l := get(a.Session)
		if !ok || l == nil {
			return nil
		}
		delete(evals, a.Approval)
		owner[a.Approval] = l
		l.applyEvaluation(ev.bundle, ev.seq)
		l.applyAsk(a, ttl)
	case kernel.KindSettle, kernel.KindRefund, gatelog.KindBudget:
		return replayBudgetEntry(e, get)
	case gatelog.KindDeclassify:
		var x gatelog.Declassify
		if err := strictJSON(e.Payload, &x); err != nil {
			return err
		}
		if l := get(x.Session); l != nil {
			l.declassify(x.Label)
		}
	case gatelog.KindSharedLabels:
		d, err := gatelog.Decode(e)
		if err != nil {
			return err
		}
		x := d.(gatelog.SharedLabels)
		if l := get(x.Session); l != nil {
			l.applySharedLabels(x)
		}
	case gatelog.KindExpire:
		if !durable {
			return nil
		}
		var x gatelog.Expire
		if err := strictJSON(e.Payload, &x); err != nil {
			return err
		}
		if l := get(x.Session); l != nil {
			l.applyExpire(x)
		}
	}
	return nil
}

// executedOf reads an execution (or reservation) from its record: its
// tags name the call, the approval it ran on, its labels and its windows
// (a window of no rule with a rate now is never counted again: the
// policy changed).
func executedOf(rec kernel.Record, reserved bool, per map[string]time.Duration) executed {
	x := executed{at: rec.Time, open: openCall{execID: rec.ExecID, tool: rec.Action.ID, cost: rec.Action.Cost, reserved: reserved}}
	for _, t := range rec.Action.Tags {
		kind, v, _ := strings.Cut(t, ":")
		switch kind {
		case "call":
			x.callID = v
		case "approval":
			x.approval = v
		case "label":
			x.labels = append(x.labels, v)
		case "conversation":
			x.conv = v
		case "trace":
			x.open.trace = v
		case "label_ttl":
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				x.labelTTL = d
			}
		case "window":
			rule, _, _ := strings.Cut(strings.TrimPrefix(v, "rule:"), "|")
			if p, ok := per[rule]; ok {
				x.windows = append(x.windows, Window{ID: v, Per: p})
			}
		}
	}
	return x
}
