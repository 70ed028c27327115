package sqlapproval

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
)

// State is where a shared request stands.
type State string

// The states of a request. A request is published Pending; answers move
// it to Approved (its last awaited approver approved) or Denied (one
// denial); its replica moves it to Closed once its gate no longer waits
// on it (decided and applied, used, expired, or answered there
// directly). Only a Pending request takes answers, and a request never
// comes back from Closed.
const (
	Pending  State = "pending"
	Approved State = "approved"
	Denied   State = "denied"
	Closed   State = "closed"
)

// Errors of the package. Give's refusals wrap one of the first six; the
// message names the request and says why, in one line.
var (
	// ErrUnknown: no request with this id was published.
	ErrUnknown = errors.New("sqlapproval: no such request")
	// ErrDecided: the request was approved, denied or closed already.
	ErrDecided = errors.New("sqlapproval: the request was decided already")
	// ErrExpired: the request expired (its approval_ttl passed).
	ErrExpired = errors.New("sqlapproval: the request expired")
	// ErrAnsweredAlready: this principal (or approver name) answered the
	// request already, on this replica or another.
	ErrAnsweredAlready = errors.New("sqlapproval: answered already")
	// ErrNotAnApprover: the request awaits nobody the answerer answers for.
	ErrNotAnApprover = errors.New("sqlapproval: not an approver of this request")
	// ErrSelfApproval: the principal a PRIVILEGE call was made for tried
	// to approve it, and the policy's self_approval is not set.
	ErrSelfApproval = errors.New("sqlapproval: a PRIVILEGE call cannot be approved by the principal that made it")
	// ErrInvalid: a request or an answer the store cannot hold (an empty
	// or oversized id, too many names, text that is not UTF-8).
	ErrInvalid = errors.New("sqlapproval: invalid")
	// ErrContention: an answer lost the race for its request's row too
	// many times in a row; try again.
	ErrContention = errors.New("sqlapproval: too much contention on the request")
)

// Bounds of what the store holds.
const (
	MaxIDLen     = 512     // a request id, a replica name, an approver name or key
	MaxNames     = 64      // approvers, awaiting, answered, groups
	MaxTextLen   = 1 << 20 // arguments, question
	MaxReasonLen = 1000
)

// Request is one call's request for a human's approval, as the replica
// whose gate asked it (and holds the call) publishes it for every
// replica's inbox. The fields are toolgate.ApprovalRequest's, plus where
// it waits and how far it got.
type Request struct {
	ID      string
	Replica string // the replica that holds the call
	Caller  string
	Tool    string
	Tier    claims.RiskTier
	// ArgumentsSHA256 is the digest of the call's arguments
	// (toolgate.Call.ArgumentsDigest); Arguments and Question are what
	// the human is shown.
	ArgumentsSHA256 string
	Arguments       string
	Question        string
	// Principal is the key of the principal the call was made for ("" for
	// none); with SelfApproval false it may not approve a PRIVILEGE call
	// (nor may an approver named as the caller).
	Principal    string
	SelfApproval bool
	// Approvers are every approver the tier needs (a k-of-n group named
	// k times); Awaiting those not answered yet; Answered the keys (or
	// approver names) of those who answered, in order.
	Approvers []string
	Awaiting  []string
	Answered  []string
	Asked     time.Time
	// Expires is when the request stops taking answers (the policy's
	// approval_ttl); zero: never.
	Expires time.Time
	State   State
	// Version counts the request's changes: an answer is written only
	// over the version it was checked against.
	Version int64
}

// Answer is a human's answer to a shared request, given at any
// replica's inbox.
type Answer struct {
	Request string
	// By is who answers: an authenticated principal's key
	// (toolgate.Principal.Key), with its Issuer, Subject and Groups; or,
	// without authentication, an approver name (Subject "").
	By              string
	Issuer, Subject string
	Groups          []string
	Approve         bool
	Reason          string
	Replica         string // where it was given
	// Set by the store when it records the answer:
	Seq  int64     // the request's version the answer made
	Name string    // the approver name (of Request.Awaiting) it answered for
	At   time.Time // when it was given
	// Applied is "" until the holding replica applied the answer to its
	// gate, then what came of it ("applied", or "refused: why").
	Applied string
}

// Principal is the answer's principal, for toolgate.Gate.ApproveAs, and
// false for an answer given as an approver name.
func (a Answer) Principal() (toolgate.Principal, bool) {
	if a.Subject == "" {
		return toolgate.Principal{}, false
	}
	return toolgate.Principal{Issuer: a.Issuer, Subject: a.Subject, Groups: slices.Clone(a.Groups)}, true
}

// FromGate is the request the gate of replica asks as req, with the
// tier's approvers and the policy's self_approval, ready to Publish.
func FromGate(req toolgate.ApprovalRequest, replica string, approvers []string, selfApproval bool) Request {
	if len(approvers) == 0 {
		approvers = []string{toolgate.DefaultApprover}
	}
	return Request{ID: req.ID, Replica: replica, Caller: req.Caller, Tool: req.Tool, Tier: req.Tier,
		ArgumentsSHA256: req.ArgumentsDigest, Arguments: req.Arguments, Question: req.Question, Principal: req.Principal,
		SelfApproval: selfApproval, Approvers: slices.Clone(approvers), Awaiting: slices.Clone(req.Awaiting), Answered: []string{},
		Asked: req.Asked.UTC(), Expires: req.Expires.UTC(), State: Pending}
}

// give is the store's one decision, pure: the request r becomes after
// the answer a at now, and a as recorded (its Name, Seq and At), or why
// a is refused (r unchanged). It keeps the gate's rules
// (toolgate.Gate.ApproveAs and Approve): only a pending, unexpired
// request takes answers; a principal answers for the first awaited name
// that is its key or "group:" and one of its groups (an approver name
// for itself), and answers once; the call's own principal (or the
// caller's name) approves a PRIVILEGE call only with self_approval; a
// denial decides the request, and so does the last awaited approval.
func give(r Request, a Answer, now time.Time) (Request, Answer, error) {
	switch {
	case !r.Expires.IsZero() && !now.Before(r.Expires):
		return r, a, fmt.Errorf("%w: request %q expired at %s", ErrExpired, r.ID, r.Expires.UTC().Format(time.RFC3339))
	case r.State != Pending:
		return r, a, fmt.Errorf("%w: request %q is %s", ErrDecided, r.ID, r.State)
	case slices.Contains(r.Answered, a.By):
		return r, a, fmt.Errorf("%w: %q answered request %q already (one principal is one approver)", ErrAnsweredAlready, a.By, r.ID)
	}
	i := slices.IndexFunc(r.Awaiting, func(name string) bool {
		if name == a.By {
			return true
		}
		g, isGroup := strings.CutPrefix(name, toolgate.GroupPrefix)
		return isGroup && a.Subject != "" && slices.Contains(a.Groups, g)
	})
	if i < 0 {
		return r, a, fmt.Errorf("%w: request %q awaits %s, and %q is none of them", ErrNotAnApprover, r.ID, strings.Join(r.Awaiting, ", "), a.By)
	}
	if a.Approve && !r.SelfApproval && r.Tier == claims.TierPrivilege && (a.By == r.Principal || a.By == r.Caller) {
		return r, a, fmt.Errorf("%w: %q made the call request %q asks about; another approver must approve it", ErrSelfApproval, a.By, r.ID)
	}
	next := r
	next.Version = r.Version + 1
	next.Answered = append(slices.Clone(r.Answered), a.By)
	a.Name, a.Seq, a.At, a.Applied = r.Awaiting[i], next.Version, now.UTC(), ""
	if !a.Approve {
		next.State = Denied
		next.Awaiting = slices.Clone(r.Awaiting)
		return next, a, nil
	}
	next.Awaiting = slices.Delete(slices.Clone(r.Awaiting), i, i+1)
	if len(next.Awaiting) == 0 {
		next.State = Approved
	}
	return next, a, nil
}

// checkID checks an id-like value: 1 to MaxIDLen bytes of UTF-8 without
// NUL.
func checkID(what, s string) error {
	switch {
	case s == "" || len(s) > MaxIDLen:
		return fmt.Errorf("%w: %s must be 1 to %d bytes, got %d", ErrInvalid, what, MaxIDLen, len(s))
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return fmt.Errorf("%w: %s %q is not UTF-8 text without NUL", ErrInvalid, what, s)
	}
	return nil
}

// checkText checks free text of at most max bytes.
func checkText(what, s string, max int) error {
	if len(s) > max || !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return fmt.Errorf("%w: %s must be UTF-8 text without NUL of at most %d bytes", ErrInvalid, what, max)
	}
	return nil
}

// checkNames checks a list of names (each an id) of at most MaxNames.
func checkNames(what string, names []string) error {
	if len(names) > MaxNames {
		return fmt.Errorf("%w: %s: %d names, at most %d", ErrInvalid, what, len(names), MaxNames)
	}
	for _, n := range names {
		if err := checkID(what, n); err != nil {
			return err
		}
	}
	return nil
}

// check checks a request before it is published.
func (r Request) check() error {
	errs := []error{checkID("request id", r.ID), checkID("replica", r.Replica), checkID("caller", r.Caller), checkID("tool", r.Tool),
		checkID("tier", string(r.Tier)), checkText("arguments digest", r.ArgumentsSHA256, MaxIDLen),
		checkText("arguments", r.Arguments, MaxTextLen), checkText("question", r.Question, MaxTextLen),
		checkText("principal", r.Principal, MaxIDLen), checkNames("approvers", r.Approvers), checkNames("awaiting", r.Awaiting),
		checkNames("answered", r.Answered)}
	if len(r.Approvers) == 0 || len(r.Awaiting) == 0 {
		errs = append(errs, fmt.Errorf("%w: request %q awaits nobody", ErrInvalid, r.ID))
	}
	if r.State != Pending || r.Version != 0 || len(r.Answered) != 0 {
		errs = append(errs, fmt.Errorf("%w: request %q is published pending, unanswered, at version 0", ErrInvalid, r.ID))
	}
	return errors.Join(errs...)
}

// check checks an answer before it is given.
func (a Answer) check() error {
	errs := []error{checkID("request id", a.Request), checkID("answerer", a.By), checkID("replica", a.Replica),
		checkText("reason", a.Reason, MaxReasonLen), checkText("issuer", a.Issuer, MaxIDLen), checkText("subject", a.Subject, MaxIDLen),
		checkNames("groups", a.Groups)}
	return errors.Join(errs...)
}
