package sqlapproval

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Table names.
const (
	RequestsTable = "verity_approval_requests"
	AnswersTable  = "verity_approval_answers"
)

// maxAttempts bounds how often Give re-reads a request whose row another
// answer changed meanwhile.
const maxAttempts = 16

var approvalMigration = sqlmigrate.Migration{
	Component: "approvals",
	Steps: []sqlmigrate.Step{
		// Version 1: one row per request, one per answer. A request's
		// answers are numbered by the version each made, and a principal
		// answers a request once (the UNIQUE key restates Give's rule).
		sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
			return []string{
				"CREATE TABLE " + RequestsTable + " (" +
					"request_id " + d.Key() + " PRIMARY KEY, " +
					"replica " + d.Key() + " NOT NULL, " +
					"caller TEXT NOT NULL, tool TEXT NOT NULL, tier TEXT NOT NULL, " +
					"arguments_sha256 TEXT NOT NULL, arguments TEXT NOT NULL, question TEXT NOT NULL, " +
					"principal TEXT NOT NULL, self_approval BIGINT NOT NULL CHECK (self_approval IN (0, 1)), " +
					"approvers TEXT NOT NULL, awaiting TEXT NOT NULL, answered TEXT NOT NULL, " +
					"asked_ns BIGINT NOT NULL, expires_ns BIGINT NOT NULL, " +
					"state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'closed')), " +
					"version BIGINT NOT NULL CHECK (version >= 0))",
				"CREATE INDEX verity_approval_requests_state ON " + RequestsTable + " (state, request_id)",
				"CREATE INDEX verity_approval_requests_replica ON " + RequestsTable + " (replica, state)",
				"CREATE TABLE " + AnswersTable + " (" +
					"request_id " + d.Key() + " NOT NULL REFERENCES " + RequestsTable + " (request_id), " +
					"seq BIGINT NOT NULL CHECK (seq >= 1), " +
					"by_key " + d.Key() + " NOT NULL, " +
					"issuer TEXT NOT NULL, subject TEXT NOT NULL, groups_json TEXT NOT NULL, " +
					"name TEXT NOT NULL, decision TEXT NOT NULL CHECK (decision IN ('approve', 'deny')), reason TEXT NOT NULL, " +
					"replica TEXT NOT NULL, given_ns BIGINT NOT NULL, applied TEXT NOT NULL, " +
					"PRIMARY KEY (request_id, seq), UNIQUE (request_id, by_key))",
				"CREATE INDEX verity_approval_answers_applied ON " + AnswersTable + " (applied, request_id)",
			}
		}),
	},
}

// Store is a database of shared approval requests and answers. It is
// safe for concurrent use, and any number of processes may open the
// same database.
type Store struct {
	db *sql.DB
	d  sqlmigrate.Dialect
	// writers serialises this process's SQLite write transactions (as
	// kernel/sqlbudget's Store does); unused for PostgreSQL.
	writers sync.Mutex

	qPublish, qGet, qPending, qUpdate, qInsertAnswer, qAnswers, qUnapplied, qApplied, qClose, qReopen, qOpen string
}

const requestColumns = "request_id, replica, caller, tool, tier, arguments_sha256, arguments, question, principal, self_approval, " +
	"approvers, awaiting, answered, asked_ns, expires_ns, state, version"

const answerColumns = "request_id, seq, by_key, issuer, subject, groups_json, name, decision, reason, replica, given_ns, applied"

// Open prepares db, opened by the host with a driver for dialect d,
// creating or migrating the approval tables (component "approvals" in
// verity_schema, migrated as the trace tables are: see
// sqlstore.Migrate). It does not take ownership of db.
func Open(ctx context.Context, db *sql.DB, d sqlstore.Dialect) (*Store, error) {
	if err := d.Valid(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("sqlapproval: Open needs a *sql.DB")
	}
	md := sqlmigrate.Dialect(d)
	if err := sqlmigrate.Migrate(ctx, db, md, approvalMigration); err != nil {
		return nil, err
	}
	r := md.Rebind
	return &Store{db: db, d: md,
		qPublish: r("INSERT INTO " + RequestsTable + " (" + requestColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) " +
			"ON CONFLICT (request_id) DO NOTHING"),
		qGet:     r("SELECT " + requestColumns + " FROM " + RequestsTable + " WHERE request_id = ?"),
		qPending: r("SELECT " + requestColumns + " FROM " + RequestsTable + " WHERE state = 'pending' AND (expires_ns = 0 OR expires_ns > ?) ORDER BY request_id"),
		qOpen:    r("SELECT " + requestColumns + " FROM " + RequestsTable + " WHERE replica = ? AND state <> 'closed' ORDER BY request_id"),
		// The answer's decision: one UPDATE conditional on the version
		// Give checked, so that of two answers read from one version
		// exactly one is written, and the other is checked again.
		qUpdate: r("UPDATE " + RequestsTable + " SET awaiting = ?, answered = ?, state = ?, version = version + 1 " +
			"WHERE request_id = ? AND version = ? AND state = 'pending'"),
		qInsertAnswer: r("INSERT INTO " + AnswersTable + " (" + answerColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')"),
		qAnswers:      r("SELECT " + answerColumns + " FROM " + AnswersTable + " WHERE request_id = ? ORDER BY seq"),
		qUnapplied: r("SELECT a.request_id, a.seq, a.by_key, a.issuer, a.subject, a.groups_json, a.name, a.decision, a.reason, a.replica, a.given_ns, a.applied" +
			" FROM " + AnswersTable + " a JOIN " + RequestsTable + " q ON q.request_id = a.request_id" +
			" WHERE a.applied = '' AND q.replica = ? ORDER BY a.request_id, a.seq"),
		qApplied: r("UPDATE " + AnswersTable + " SET applied = ? WHERE request_id = ? AND seq = ? AND applied = ''"),
		qClose:   r("UPDATE " + RequestsTable + " SET state = 'closed', version = version + 1 WHERE request_id = ? AND replica = ? AND state <> 'closed'"),
		qReopen: r("UPDATE " + RequestsTable + " SET awaiting = ?, state = 'pending', version = version + 1 " +
			"WHERE request_id = ? AND replica = ? AND state <> 'closed'"),
	}, nil
}

// lockWriters takes the SQLite writer mutex and returns its release.
func (s *Store) lockWriters() func() {
	if s.d != sqlmigrate.SQLite {
		return func() {}
	}
	s.writers.Lock()
	return s.writers.Unlock
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Publish records r, asked by the gate of r.Replica, for every replica
// to list and answer, and reports whether it was new: a request
// published already is left as it is (a replica publishes its waiting
// requests again after a restart, and the answers given meanwhile stay).
func (s *Store) Publish(ctx context.Context, r Request) (bool, error) {
	if r.Answered == nil {
		r.Answered = []string{}
	}
	if err := r.check(); err != nil {
		return false, err
	}
	defer s.lockWriters()()
	res, err := s.db.ExecContext(ctx, s.qPublish, r.ID, r.Replica, r.Caller, r.Tool, string(r.Tier), r.ArgumentsSHA256, r.Arguments,
		r.Question, r.Principal, boolInt(r.SelfApproval), encodeNames(r.Approvers), encodeNames(r.Awaiting), encodeNames(r.Answered),
		nanos(r.Asked), nanos(r.Expires), string(Pending), int64(0))
	if err != nil {
		return false, fmt.Errorf("sqlapproval: publishing request %q: %w", r.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlapproval: publishing request %q: %w", r.ID, err)
	}
	return n == 1, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRequest(row scanner) (Request, error) {
	var r Request
	var tier, approvers, awaiting, answered, state string
	var self, asked, expires int64
	if err := row.Scan(&r.ID, &r.Replica, &r.Caller, &r.Tool, &tier, &r.ArgumentsSHA256, &r.Arguments, &r.Question, &r.Principal, &self,
		&approvers, &awaiting, &answered, &asked, &expires, &state, &r.Version); err != nil {
		return Request{}, err
	}
	r.Tier, r.SelfApproval, r.Asked, r.Expires, r.State = claims.RiskTier(tier), self == 1, fromNanos(asked), fromNanos(expires), State(state)
	var err error
	if r.Approvers, err = decodeNames("approvers", approvers); err != nil {
		return Request{}, fmt.Errorf("request %q: %w", r.ID, err)
	}
	if r.Awaiting, err = decodeNames("awaiting", awaiting); err != nil {
		return Request{}, fmt.Errorf("request %q: %w", r.ID, err)
	}
	if r.Answered, err = decodeNames("answered", answered); err != nil {
		return Request{}, fmt.Errorf("request %q: %w", r.ID, err)
	}
	return r, nil
}

func scanAnswer(row scanner) (Answer, error) {
	var a Answer
	var groups, decision string
	var given int64
	if err := row.Scan(&a.Request, &a.Seq, &a.By, &a.Issuer, &a.Subject, &groups, &a.Name, &decision, &a.Reason, &a.Replica, &given, &a.Applied); err != nil {
		return Answer{}, err
	}
	a.Approve, a.At = decision == "approve", fromNanos(given)
	var err error
	if a.Groups, err = decodeNames("groups_json", groups); err != nil {
		return Answer{}, fmt.Errorf("answer %d to %q: %w", a.Seq, a.Request, err)
	}
	if len(a.Groups) == 0 {
		a.Groups = nil
	}
	return a, nil
}

// Get returns the request id, or ErrUnknown.
func (s *Store) Get(ctx context.Context, id string) (Request, error) {
	r, err := scanRequest(s.db.QueryRowContext(ctx, s.qGet, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Request{}, fmt.Errorf("%w: %q was never asked, or its replica has not published it yet", ErrUnknown, id)
	}
	if err != nil {
		return Request{}, fmt.Errorf("sqlapproval: reading request %q: %w", id, err)
	}
	return r, nil
}

func (s *Store) queryRequests(ctx context.Context, q string, args ...any) ([]Request, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlapproval: listing requests: %w", err)
	}
	defer rows.Close()
	out := []Request{}
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlapproval: listing requests: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlapproval: listing requests: %w", err)
	}
	return out, nil
}

// Pending lists every replica's requests that take answers at now
// (pending and unexpired), by id.
func (s *Store) Pending(ctx context.Context, now time.Time) ([]Request, error) {
	return s.queryRequests(ctx, s.qPending, now.UnixNano())
}

// Open lists replica's requests not closed yet (pending, approved or
// denied), by id: what its gate may still have to apply or close.
func (s *Store) Open(ctx context.Context, replica string) ([]Request, error) {
	return s.queryRequests(ctx, s.qOpen, replica)
}

// Answers returns the answers given to request id, in the order they
// were given.
func (s *Store) Answers(ctx context.Context, id string) ([]Answer, error) {
	return s.queryAnswers(ctx, s.qAnswers, id)
}

// Unapplied returns the answers to replica's requests that it has not
// applied yet, by request and in the order they were given.
func (s *Store) Unapplied(ctx context.Context, replica string) ([]Answer, error) {
	return s.queryAnswers(ctx, s.qUnapplied, replica)
}

func (s *Store) queryAnswers(ctx context.Context, q string, arg any) ([]Answer, error) {
	rows, err := s.db.QueryContext(ctx, q, arg)
	if err != nil {
		return nil, fmt.Errorf("sqlapproval: listing answers: %w", err)
	}
	defer rows.Close()
	var out []Answer
	for rows.Next() {
		a, err := scanAnswer(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlapproval: listing answers: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlapproval: listing answers: %w", err)
	}
	return out, nil
}

// Give records the answer a at now, once: it checks a against the
// request as it stands (give's rules: pending, unexpired, an awaited
// approver, each principal once, no self-approval of a PRIVILEGE call)
// and writes the request's new state and the answer in one transaction,
// conditional on the version it checked. Of answers racing for one
// request — on one replica or several — each is checked against what
// the one before it left: a second answer to a decided request is
// refused (ErrDecided, naming who decided it and where). It returns the
// request as the answer left it and the answer as recorded.
func (s *Store) Give(ctx context.Context, a Answer, now time.Time) (Request, Answer, error) {
	if err := a.check(); err != nil {
		return Request{}, Answer{}, err
	}
	for range maxAttempts {
		r, err := s.Get(ctx, a.Request)
		if err != nil {
			return Request{}, Answer{}, err
		}
		next, rec, err := give(r, a, now)
		if errors.Is(err, ErrDecided) {
			return r, Answer{}, s.decidedBy(ctx, r, err)
		}
		if err != nil {
			return r, Answer{}, err
		}
		ok, err := s.write(ctx, r.Version, next, rec)
		if err != nil {
			return Request{}, Answer{}, err
		}
		if ok {
			return next, rec, nil
		}
	}
	return Request{}, Answer{}, fmt.Errorf("%w: %q", ErrContention, a.Request)
}

// write stores next and its answer rec if the request is still at
// version from, and reports whether it was.
func (s *Store) write(ctx context.Context, from int64, next Request, rec Answer) (bool, error) {
	defer s.lockWriters()()
	tx, err := s.db.BeginTx(ctx, s.d.TxOptions())
	if err != nil {
		return false, fmt.Errorf("sqlapproval: answering %q: %w", rec.Request, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, s.qUpdate, encodeNames(next.Awaiting), encodeNames(next.Answered), string(next.State), next.ID, from)
	if err != nil {
		return false, fmt.Errorf("sqlapproval: answering %q: %w", rec.Request, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err
	}
	decision := "deny"
	if rec.Approve {
		decision = "approve"
	}
	if _, err := tx.ExecContext(ctx, s.qInsertAnswer, rec.Request, rec.Seq, rec.By, rec.Issuer, rec.Subject, encodeNames(rec.Groups),
		rec.Name, decision, rec.Reason, rec.Replica, nanos(rec.At)); err != nil {
		return false, fmt.Errorf("sqlapproval: recording the answer to %q: %w", rec.Request, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlapproval: answering %q: %w", rec.Request, err)
	}
	return true, nil
}

// decidedBy says who decided r, for an answer that came after.
func (s *Store) decidedBy(ctx context.Context, r Request, err error) error {
	answers, aerr := s.Answers(ctx, r.ID)
	if aerr != nil || len(answers) == 0 {
		if r.State == Closed {
			return fmt.Errorf("%w: request %q no longer waits (replica %s decided, used or expired it)", ErrDecided, r.ID, r.Replica)
		}
		return err
	}
	last := answers[len(answers)-1]
	how := "denied"
	if last.Approve {
		how = "approved"
	}
	if r.State == Pending || r.State == Closed && last.Approve && len(r.Awaiting) > 0 {
		// Closed at its replica with approvals still awaited: answered
		// there directly, or expired.
		return fmt.Errorf("%w: request %q no longer waits (replica %s decided, used or expired it)", ErrDecided, r.ID, r.Replica)
	}
	return fmt.Errorf("%w: request %q was %s already, by %s at replica %s", ErrDecided, r.ID, how, last.By, last.Replica)
}

// MarkApplied records what came of applying the answer seq to request
// id on its replica's gate ("applied", or "refused: why"); an answer is
// marked once.
func (s *Store) MarkApplied(ctx context.Context, id string, seq int64, outcome string) error {
	if outcome == "" {
		return fmt.Errorf("%w: an empty outcome", ErrInvalid)
	}
	defer s.lockWriters()()
	if _, err := s.db.ExecContext(ctx, s.qApplied, outcome, id, seq); err != nil {
		return fmt.Errorf("sqlapproval: marking answer %d to %q: %w", seq, id, err)
	}
	return nil
}

// Close records that replica's gate no longer waits on request id
// (decided and applied, used, expired, or answered there directly): it
// takes no more answers and leaves every inbox. Closing a closed request,
// or another replica's, changes nothing.
func (s *Store) Close(ctx context.Context, replica, id string) error {
	defer s.lockWriters()()
	if _, err := s.db.ExecContext(ctx, s.qClose, id, replica); err != nil {
		return fmt.Errorf("sqlapproval: closing request %q: %w", id, err)
	}
	return nil
}

// Reopen puts request id of replica back to pending with awaiting, what
// its gate still waits for: after the gate refused an answer the store
// had taken (the request was answered on the replica directly
// meanwhile), the store follows the gate. A closed request stays closed.
func (s *Store) Reopen(ctx context.Context, replica, id string, awaiting []string) error {
	if err := checkNames("awaiting", awaiting); err != nil {
		return err
	}
	if len(awaiting) == 0 {
		return fmt.Errorf("%w: reopening %q for nobody", ErrInvalid, id)
	}
	defer s.lockWriters()()
	if _, err := s.db.ExecContext(ctx, s.qReopen, encodeNames(slices.Clone(awaiting)), id, replica); err != nil {
		return fmt.Errorf("sqlapproval: reopening request %q: %w", id, err)
	}
	return nil
}
