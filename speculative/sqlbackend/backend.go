package sqlbackend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Table names.
const (
	PropositionsTable = "verity_spec_propositions"
	EvidenceTable     = "verity_spec_evidence"
	HypothesesTable   = "verity_spec_hypotheses"
	StatusTable       = "verity_spec_status_changes"
)

// statusNames are the values the status columns may hold.
const statusNames = "('refuted', 'speculative', 'unresolved', 'supported', 'proven')"

var migration = sqlmigrate.Migration{
	Component: "speculative",
	Steps: []sqlmigrate.Step{
		// Version 1. Every row names the write intent that made it, so a
		// restarted Steward can ask whether a write landed (Applied).
		// Guard 4 is in the schema: a hypothesis lives in its own table,
		// under a session id that is neither NULL nor empty, and nothing
		// that reads evidence reads that table.
		sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
			return []string{
				"CREATE TABLE " + PropositionsTable + " (" +
					"claim_id " + d.Key() + " PRIMARY KEY CHECK (claim_id <> ''), " +
					"document " + d.Blob() + " NOT NULL, " +
					"intent " + d.Key() + " NOT NULL)",
				"CREATE TABLE " + EvidenceTable + " (" +
					"seq " + d.Serial() + ", " +
					"evidence_id " + d.Key() + " NOT NULL UNIQUE, " +
					"claim_id " + d.Key() + " NOT NULL CHECK (claim_id <> ''), " +
					"document " + d.Blob() + " NOT NULL, " +
					"intent " + d.Key() + " NOT NULL)",
				"CREATE INDEX verity_spec_evidence_claim ON " + EvidenceTable + " (claim_id, seq)",
				"CREATE INDEX verity_spec_evidence_intent ON " + EvidenceTable + " (intent)",
				"CREATE TABLE " + HypothesesTable + " (" +
					"seq " + d.Serial() + ", " +
					"session_id " + d.Key() + " NOT NULL CHECK (session_id <> ''), " +
					"hypothesis_id " + d.Key() + " NOT NULL, " +
					"claim_id " + d.Key() + " NOT NULL, " +
					"document " + d.Blob() + " NOT NULL, " +
					"intent " + d.Key() + " NOT NULL, " +
					"link_intent " + d.Key() + ", " +
					"UNIQUE (session_id, hypothesis_id))",
				"CREATE INDEX verity_spec_hypotheses_session ON " + HypothesesTable + " (session_id, seq)",
				"CREATE INDEX verity_spec_hypotheses_intent ON " + HypothesesTable + " (intent)",
				"CREATE INDEX verity_spec_hypotheses_link ON " + HypothesesTable + " (link_intent)",
				"CREATE TABLE " + StatusTable + " (" +
					"seq " + d.Serial() + ", " +
					"claim_id " + d.Key() + " NOT NULL CHECK (claim_id <> ''), " +
					"from_status TEXT NOT NULL CHECK (from_status IN " + statusNames + "), " +
					"to_status TEXT NOT NULL CHECK (to_status IN " + statusNames + "), " +
					"evidence " + d.Blob() + " NOT NULL CHECK (" + d.ByteLength() + "(evidence) % 32 = 0), " +
					"intent " + d.Key() + " NOT NULL UNIQUE)",
				"CREATE INDEX verity_spec_status_claim ON " + StatusTable + " (claim_id, seq)",
			}
		}),
	},
}

// queries are the package's statements, in the dialect's spelling. The
// evidence queries name EvidenceTable alone (Guard 4:
// TestEvidenceQueriesNeverReadHypotheses).
type queries struct {
	putProposition, putEvidence, putHypothesis, link, hasProposition, putStatus string
	evidence, hypotheses, status                                                string
	applied                                                                     map[speculative.WriteKind]string
}

func newQueries(d sqlmigrate.Dialect) queries {
	r := d.Rebind
	return queries{
		putProposition: r("INSERT INTO " + PropositionsTable + " (claim_id, document, intent) VALUES (?, ?, ?) " +
			"ON CONFLICT (claim_id) DO UPDATE SET document = excluded.document, intent = excluded.intent"),
		// Evidence is content-addressed: the same document is stored once.
		putEvidence: r("INSERT INTO " + EvidenceTable + " (evidence_id, claim_id, document, intent) VALUES (?, ?, ?, ?) " +
			"ON CONFLICT (evidence_id) DO NOTHING"),
		putHypothesis: r("INSERT INTO " + HypothesesTable + " (session_id, hypothesis_id, claim_id, document, intent) VALUES (?, ?, ?, ?, ?)"),
		// One statement decides a link: the proposition must exist.
		link: r("UPDATE " + HypothesesTable + " SET link_intent = ? WHERE session_id = ? AND hypothesis_id = ? " +
			"AND EXISTS (SELECT 1 FROM " + PropositionsTable + " WHERE claim_id = ?)"),
		hasProposition: r("SELECT COUNT(*) FROM " + PropositionsTable + " WHERE claim_id = ?"),
		putStatus:      r("INSERT INTO " + StatusTable + " (claim_id, from_status, to_status, evidence, intent) VALUES (?, ?, ?, ?, ?)"),
		evidence:       r("SELECT document FROM " + EvidenceTable + " WHERE claim_id = ? ORDER BY seq"),
		hypotheses: r("SELECT hypothesis_id, claim_id, document, CASE WHEN link_intent IS NULL THEN 0 ELSE 1 END FROM " +
			HypothesesTable + " WHERE session_id = ? ORDER BY seq"),
		status: r("SELECT to_status, evidence FROM " + StatusTable + " WHERE claim_id = ? ORDER BY seq DESC LIMIT 1"),
		applied: map[speculative.WriteKind]string{
			speculative.WriteKindEvidence:    r("SELECT COUNT(*) FROM " + EvidenceTable + " WHERE intent = ?"),
			speculative.WriteKindProposition: r("SELECT COUNT(*) FROM " + PropositionsTable + " WHERE intent = ?"),
			speculative.WriteKindHypothesis:  r("SELECT COUNT(*) FROM " + HypothesesTable + " WHERE intent = ?"),
			speculative.WriteKindLink:        r("SELECT COUNT(*) FROM " + HypothesesTable + " WHERE link_intent = ?"),
			speculative.WriteKindStatus:      r("SELECT COUNT(*) FROM " + StatusTable + " WHERE intent = ?"),
		},
	}
}

// Backend is a speculative.Backend in a SQL database. It is safe for
// concurrent use, and any number of processes may open the same database
// (one Steward at a time writes through it: see speculative.Steward).
type Backend struct {
	db *sql.DB
	q  queries
}

var _ speculative.Backend = (*Backend)(nil)

// Open prepares db, opened by the host with a driver for dialect d,
// creating or migrating the tables (component "speculative" in the
// version table verity_schema, as sqlstore.Migrate does for the trace
// tables). It does not take ownership of db.
func Open(ctx context.Context, db *sql.DB, d sqlstore.Dialect) (*Backend, error) {
	if err := d.Valid(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("sqlbackend: Open needs a *sql.DB")
	}
	md := sqlmigrate.Dialect(d)
	if err := sqlmigrate.Migrate(ctx, db, md, migration); err != nil {
		return nil, err
	}
	return &Backend{db: db, q: newQueries(md)}, nil
}

// Apply implements speculative.Backend: each write is one statement.
func (b *Backend) Apply(ctx context.Context, w speculative.Write) error {
	switch w.Kind() {
	case speculative.WriteKindProposition:
		return b.exec(ctx, "writing proposition", b.q.putProposition, w.ClaimID(), w.Document(), w.Intent())
	case speculative.WriteKindEvidence:
		return b.exec(ctx, "writing evidence", b.q.putEvidence, w.ID(), w.ClaimID(), w.Document(), w.Intent())
	case speculative.WriteKindHypothesis:
		return b.exec(ctx, "writing hypothesis", b.q.putHypothesis, w.SessionID(), w.ID(), w.ClaimID(), w.Document(), w.Intent())
	case speculative.WriteKindLink:
		return b.link(ctx, w)
	case speculative.WriteKindStatus:
		from, to := w.Transition()
		fromText, err := from.MarshalText()
		if err != nil {
			return err
		}
		toText, err := to.MarshalText()
		if err != nil {
			return err
		}
		return b.exec(ctx, "writing status", b.q.putStatus, w.ClaimID(), string(fromText), string(toText), joinIDs(w.Evidence()), w.Intent())
	}
	return speculative.ErrNotSteward
}

func (b *Backend) exec(ctx context.Context, what, query string, args ...any) error {
	if _, err := b.db.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("sqlbackend: %s: %w", what, err)
	}
	return nil
}

func (b *Backend) link(ctx context.Context, w speculative.Write) error {
	res, err := b.db.ExecContext(ctx, b.q.link, w.Intent(), w.SessionID(), w.ID(), w.ClaimID())
	if err != nil {
		return fmt.Errorf("sqlbackend: linking hypothesis: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return wrapDB("linking hypothesis", err)
	}
	has, err := b.count(ctx, b.q.hasProposition, w.ClaimID())
	switch {
	case err != nil:
		return fmt.Errorf("sqlbackend: linking hypothesis: %w", err)
	case !has:
		return fmt.Errorf("%w: %q", speculative.ErrNoProposition, w.ClaimID())
	}
	return fmt.Errorf("%w: link to unknown hypothesis %q", speculative.ErrMalformed, w.ID())
}

func wrapDB(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlbackend: %s: %w", what, err)
}

func (b *Backend) count(ctx context.Context, query string, arg string) (bool, error) {
	var n int64
	if err := b.db.QueryRowContext(ctx, query, arg).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// Evidence implements speculative.Backend. It reads EvidenceTable only.
func (b *Backend) Evidence(ctx context.Context, claimID string) ([][]byte, error) {
	rows, err := b.db.QueryContext(ctx, b.q.evidence, claimID)
	if err != nil {
		return nil, fmt.Errorf("sqlbackend: reading evidence: %w", err)
	}
	defer rows.Close()
	out := [][]byte{}
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("sqlbackend: reading evidence: %w", err)
		}
		out = append(out, doc)
	}
	return out, wrapDB("reading evidence", rows.Err())
}

// Hypotheses implements speculative.Backend: the hypotheses of one session.
func (b *Backend) Hypotheses(ctx context.Context, sessionID string) ([]speculative.HypothesisRecord, error) {
	rows, err := b.db.QueryContext(ctx, b.q.hypotheses, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlbackend: reading hypotheses: %w", err)
	}
	defer rows.Close()
	var out []speculative.HypothesisRecord
	for rows.Next() {
		h := speculative.HypothesisRecord{SessionID: sessionID}
		var linked int64
		if err := rows.Scan(&h.ID, &h.ClaimID, &h.Document, &linked); err != nil {
			return nil, fmt.Errorf("sqlbackend: reading hypotheses: %w", err)
		}
		h.Linked = linked != 0
		out = append(out, h)
	}
	return out, wrapDB("reading hypotheses", rows.Err())
}

// Status implements speculative.Backend: the last status change of a
// claim; the zero record when it has none.
func (b *Backend) Status(ctx context.Context, claimID string) (speculative.StatusRecord, error) {
	var status string
	var ids []byte
	err := b.db.QueryRowContext(ctx, b.q.status, claimID).Scan(&status, &ids)
	if errors.Is(err, sql.ErrNoRows) {
		return speculative.StatusRecord{}, nil
	}
	if err != nil {
		return speculative.StatusRecord{}, fmt.Errorf("sqlbackend: reading status: %w", err)
	}
	s, err := speculative.ParseStatus(status)
	if err != nil {
		return speculative.StatusRecord{}, fmt.Errorf("sqlbackend: stored status of %q: %w", claimID, err)
	}
	evidence, err := splitIDs(ids)
	if err != nil {
		return speculative.StatusRecord{}, fmt.Errorf("sqlbackend: stored status of %q: %w", claimID, err)
	}
	return speculative.StatusRecord{Status: s, Evidence: evidence}, nil
}

// Applied implements speculative.Backend.
func (b *Backend) Applied(ctx context.Context, kind speculative.WriteKind, intent string) (bool, error) {
	q, ok := b.q.applied[kind]
	if !ok {
		return false, fmt.Errorf("%w: write kind %v", speculative.ErrMalformed, kind)
	}
	done, err := b.count(ctx, q, intent)
	return done, wrapDB("reading applied writes", err)
}

// joinIDs stores evidence ids as their 32 bytes each, concatenated.
func joinIDs(ids []trace.Hash) []byte {
	out := make([]byte, 0, len(ids)*len(trace.Hash{}))
	for _, id := range ids {
		out = append(out, id[:]...)
	}
	return out
}

func splitIDs(b []byte) ([]trace.Hash, error) {
	const n = len(trace.Hash{})
	if len(b)%n != 0 {
		return nil, fmt.Errorf("%w: evidence ids of %d bytes", speculative.ErrMalformed, len(b))
	}
	var out []trace.Hash
	for i := 0; i < len(b); i += n {
		out = append(out, trace.Hash(b[i:i+n]))
	}
	return out, nil
}
