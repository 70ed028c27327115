package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/sqlapproval"
)

// Shared approvals (-db with -approvals): the replicas of one gateway —
// several verity-mcp, each with its own log, on one database — share
// their waiting requests and the answers given to them
// (kernel/toolgate/sqlapproval), so that an approval given at any
// replica's inbox releases the call wherever it is held, exactly once.
//
// Each replica, every sharedPoll and before its inbox lists or answers:
//
//  1. publishes the requests its gate waits on (Gate.Pending) that it
//     has not published yet;
//  2. applies to its gate the answers given (at any replica) to its own
//     requests — Gate.ApproveAs or Approve, DenyAs or Deny, recorded on
//     its log, the reason naming the replica it was given at — and
//     marks each applied, or refused with the gate's reason;
//  3. closes its requests its gate no longer waits on.
//
// Its inbox lists every replica's pending requests, naming the replica
// that holds each, and writes answers to the database (Store.Give: once,
// over the version it checked), applying at once those to its own.
// Polling, rather than PostgreSQL's LISTEN/NOTIFY, keeps to database/sql
// and works on SQLite: an answer given at another replica reaches the
// held call within sharedPoll.

// sharedPoll is how often a replica publishes its requests and picks
// up the answers to them.
const sharedPoll = 200 * time.Millisecond

// sharedConfig is -replica.
type sharedConfig struct {
	replica string
}

func addSharedApprovalFlags(fs *flag.FlagSet, sc *sharedConfig) {
	fs.StringVar(&sc.replica, "replica", "", "with -db and -approvals, the name this proxy goes by among the replicas sharing approvals (default HOST:LOGPATH); the inbox shows which replica holds each request")
}

// check reads -replica against -db and -approvals.
func (sc sharedConfig) check(c config) error {
	switch {
	case sc.replica != "" && (c.db == "" || !c.inbox.enabled()):
		return errors.New("-replica needs -db and -approvals (approvals shared by the replicas on one database)")
	case len(sc.replica) > sqlapproval.MaxIDLen || strings.ContainsFunc(sc.replica, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return fmt.Errorf("-replica: at most %d bytes, without control characters", sqlapproval.MaxIDLen)
	}
	return nil
}

// name is the replica's name: -replica, else the host's name and the
// log's absolute path — the same after a restart on the same log.
func (sc sharedConfig) name(logPath string) string {
	if sc.replica != "" {
		return sc.replica
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if abs, err := filepath.Abs(logPath); err == nil {
		logPath = abs
	}
	n := host + ":" + logPath
	if len(n) > sqlapproval.MaxIDLen {
		n = n[len(n)-sqlapproval.MaxIDLen:]
	}
	return n
}

// sharedInbox is one replica's side of the shared approvals.
type sharedInbox struct {
	store     *sqlapproval.Store
	gate      *toolgate.Gate
	replica   string
	approvers map[claims.RiskTier][]string
	self      bool // the policy's self_approval
	clock     func() time.Time
	logger    *slog.Logger

	mu        sync.Mutex      // one pass at a time
	published map[string]bool // the gate's waiting requests published by this process
}

// startShared opens the shared approvals on -db for gate and polls them
// until the returned stop is called.
func startShared(c config, cfg toolgate.Policy, gate *toolgate.Gate, logger *slog.Logger) (*sharedInbox, func(), error) {
	spec, err := parseDB(c.db)
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open(spec.Driver, spec.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("-db: %w", err)
	}
	store, err := sqlapproval.Open(context.Background(), db, spec.Dialect)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("-db: shared approvals: %w", err)
	}
	s := &sharedInbox{store: store, gate: gate, replica: c.shared.name(c.log), approvers: cfg.Approvers, self: cfg.SelfApproval,
		clock: time.Now, logger: logger, published: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sharedPoll)
		defer t.Stop()
		failing := false
		for {
			err := s.sync(ctx)
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				logger.Error("shared approvals: the database failed; retrying", "err", err)
				failing = true
			case err == nil && failing:
				logger.Info("shared approvals: the database answers again")
				failing = false
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	logger.Info("shared approvals", "replica", s.replica, "db", spec.Dialect)
	return s, func() {
		cancel()
		<-done
		_ = db.Close()
	}, nil
}

// publish publishes the gate's waiting requests not yet published.
// s.mu is held.
func (s *sharedInbox) publish(ctx context.Context) (map[string]toolgate.ApprovalRequest, error) {
	pending := s.gate.Pending()
	waiting := make(map[string]toolgate.ApprovalRequest, len(pending))
	for _, req := range pending {
		waiting[req.ID] = req
		if s.published[req.ID] {
			continue
		}
		if _, err := s.store.Publish(ctx, sqlapproval.FromGate(req, s.replica, s.approvers[req.Tier], s.self)); err != nil {
			return nil, err
		}
		s.published[req.ID] = true
	}
	for id := range s.published {
		if _, ok := waiting[id]; !ok {
			delete(s.published, id)
		}
	}
	return waiting, nil
}

// sync is one pass: publish, apply, close.
func (s *sharedInbox) sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.publish(ctx); err != nil {
		return err
	}
	answers, err := s.store.Unapplied(ctx, s.replica)
	if err != nil {
		return err
	}
	for _, a := range answers {
		if err := s.apply(ctx, a); err != nil {
			return err
		}
	}
	open, err := s.store.Open(ctx, s.replica)
	if err != nil {
		return err
	}
	waiting := map[string]bool{}
	for _, req := range s.gate.Pending() {
		waiting[req.ID] = true
	}
	for _, r := range open {
		if !waiting[r.ID] {
			if err := s.store.Close(ctx, s.replica, r.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply applies the answer a to the gate, which records it on the log
// (or records why it refuses it), and marks it in the database. A
// failure of the log or the database leaves it to the next pass.
func (s *sharedInbox) apply(ctx context.Context, a sqlapproval.Answer) error {
	reason := a.Reason
	if a.Replica != s.replica {
		reason = strings.TrimSpace(reason + " [answered at replica " + a.Replica + "]")
	}
	var granted bool
	var err error
	p, authed := a.Principal()
	switch {
	case authed && a.Approve:
		granted, err = s.gate.ApproveAs(ctx, a.Request, p, reason)
	case authed:
		err = s.gate.DenyAs(ctx, a.Request, p, reason)
	case a.Approve:
		granted, err = s.gate.Approve(ctx, a.Request, a.Name, reason)
	default:
		err = s.gate.Deny(ctx, a.Request, a.Name, reason)
	}
	outcome := "applied"
	switch {
	case err == nil:
		s.logger.Info("shared approvals: answer applied", "approval", a.Request, "by", a.By, "approve", a.Approve,
			"given_at", a.Replica, "granted", granted)
	case gateRefused(err):
		outcome = "refused: " + strings.TrimPrefix(err.Error(), "toolgate: ")
		s.logger.Warn("shared approvals: the gate refused an answer", "approval", a.Request, "by", a.By, "given_at", a.Replica, "err", err)
	default:
		return err
	}
	if err := s.store.MarkApplied(ctx, a.Request, a.Seq, outcome); err != nil {
		return err
	}
	if err == nil {
		return nil
	}
	// The store took an answer its holder's gate refused: the store
	// follows the gate.
	for _, req := range s.gate.Pending() {
		if req.ID == a.Request {
			return s.store.Reopen(ctx, s.replica, a.Request, req.Awaiting)
		}
	}
	return s.store.Close(ctx, s.replica, a.Request)
}

// gateRefused reports whether err is the gate refusing an answer (not a
// failure of its log).
func gateRefused(err error) bool {
	return errors.Is(err, toolgate.ErrNotAnApprover) || errors.Is(err, toolgate.ErrSelfApproval) ||
		errors.Is(err, toolgate.ErrUnknownApproval) || errors.Is(err, claims.ErrAlreadyDecided) || errors.Is(err, claims.ErrNotRequired)
}

// listShared is GET /api/requests with shared approvals: every
// replica's pending requests.
func (in *inbox) listShared(w http.ResponseWriter, r *http.Request, p toolgate.Principal, authed bool, out inboxList) {
	s := in.shared
	ctx := r.Context()
	s.mu.Lock()
	_, err := s.publish(ctx)
	s.mu.Unlock()
	var reqs []sqlapproval.Request
	if err == nil {
		reqs, err = s.store.Pending(ctx, s.clock())
	}
	if err != nil {
		in.logger.Error("approval inbox: listing the shared requests", "err", err)
		http.Error(w, "the shared requests could not be read", http.StatusServiceUnavailable)
		return
	}
	who := in.approver
	if authed {
		who = p.Key()
	}
	for _, q := range reqs {
		ir := inboxRequest{ID: q.ID, Caller: q.Caller, Tool: q.Tool, Tier: string(q.Tier), Arguments: q.Arguments, Question: q.Question,
			Approvers: q.Approvers, Awaiting: q.Awaiting, Asked: q.Asked, Replica: q.Replica,
			CanAnswer: in.answersFor(p, authed, q.Awaiting) && !slices.Contains(q.Answered, who)}
		ir.Approved, ir.Needed = approvedOf(ir.Approvers, ir.Awaiting), len(ir.Approvers)
		ir.Given = len(ir.Approved)
		if !q.Expires.IsZero() {
			ir.Expires = q.Expires.UTC().Format(time.RFC3339)
		}
		out.Requests = append(out.Requests, ir)
	}
	writeJSON(w, http.StatusOK, out)
}

// answerShared is POST /api/answer with shared approvals: the answer is
// written to the database once, then applied by the replica that holds
// the call (at once when it is this one).
func (in *inbox) answerShared(w http.ResponseWriter, r *http.Request, a inboxAnswer, p toolgate.Principal, authed bool) {
	s := in.shared
	ctx := context.WithoutCancel(r.Context()) // an answer given is recorded
	res := answerResult{ID: a.ID, Decision: a.Decision}
	ans := sqlapproval.Answer{Request: a.ID, By: in.approver, Approve: a.Decision == decisionApprove, Reason: a.Reason, Replica: s.replica}
	if authed {
		ans.By, ans.Issuer, ans.Subject, ans.Groups = p.Key(), p.Issuer, p.Subject, slices.Clone(p.Groups)
	}
	s.mu.Lock()
	_, err := s.publish(ctx) // a request of this replica is answerable at once
	s.mu.Unlock()
	var req sqlapproval.Request
	if err == nil {
		req, _, err = s.store.Give(ctx, ans, s.clock())
	}
	code := http.StatusOK
	switch {
	case errors.Is(err, sqlapproval.ErrSelfApproval):
		code, res.Error = http.StatusForbidden, "the principal that made a PRIVILEGE call cannot approve it: another approver must"
	case errors.Is(err, sqlapproval.ErrNotAnApprover):
		code, res.Error = http.StatusForbidden, "not an approver of this request: "+oneError(err)
	case errors.Is(err, sqlapproval.ErrDecided), errors.Is(err, sqlapproval.ErrAnsweredAlready):
		code, res.Error = http.StatusConflict, oneError(err)
	case errors.Is(err, sqlapproval.ErrUnknown), errors.Is(err, sqlapproval.ErrExpired):
		code, res.Error = http.StatusNotFound, "no such request waits (decided, expired, or never asked): "+oneError(err)
	case err != nil:
		in.logger.Error("approval inbox: recording a shared answer", "approval", a.ID, "by", ans.By, "err", err)
		code, res.Error = http.StatusInternalServerError, "the answer could not be recorded"
	}
	if err != nil {
		if code != http.StatusInternalServerError {
			in.logger.Warn("approval inbox: refused answer", "approval", a.ID, "by", ans.By, "decision", a.Decision, "err", err)
		}
		writeJSON(w, code, res)
		return
	}
	if req.Replica == s.replica {
		if err := s.sync(ctx); err != nil {
			in.logger.Error("approval inbox: applying an answer", "approval", a.ID, "err", err)
		}
	}
	res.Granted = req.State == sqlapproval.Approved
	res.Awaiting = slices.Clone(req.Awaiting)
	if req.State != sqlapproval.Pending {
		res.Awaiting = []string{}
	}
	in.logger.Info("approval inbox: answer", "approval", a.ID, "by", ans.By, "decision", a.Decision, "granted", res.Granted,
		"awaiting", res.Awaiting, "held_at", req.Replica)
	writeJSON(w, http.StatusOK, res)
}

// oneError is err's text without the store's prefixes.
func oneError(err error) string {
	s := err.Error()
	for _, p := range []string{"sqlapproval: ", "the request was decided already: ", "answered already: ", "not an approver of this request: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}
