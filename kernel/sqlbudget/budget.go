package sqlbudget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Table names.
const (
	BudgetsTable = "verity_budgets"
	ChargesTable = "verity_budget_charges"
)

// MaxIDLen is the longest budget or action id, in bytes.
const MaxIDLen = 256

// Errors of the package. Charge and Refund also return errors wrapping
// the kernel's sentinels (see SharedBudget).
var (
	ErrNotFound      = errors.New("sqlbudget: budget not found")
	ErrExists        = errors.New("sqlbudget: budget already exists")
	ErrLimitMismatch = errors.New("sqlbudget: budget exists with another limit")
	ErrInvalidID     = errors.New("sqlbudget: invalid id")
)

var budgetMigration = sqlmigrate.Migration{
	Component: "budget",
	Steps: []sqlmigrate.Step{
		// Version 1: one row per budget holding its totals, one row per
		// charged action. The CHECK constraints restate T1 and the refund
		// rule, so a statement that would break them fails in the
		// database even if it came from elsewhere.
		sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
			return []string{
				"CREATE TABLE " + BudgetsTable + " (" +
					"budget_id " + d.Key() + " PRIMARY KEY, " +
					"limit_amount BIGINT NOT NULL CHECK (limit_amount >= 0), " +
					"gross BIGINT NOT NULL CHECK (gross >= 0), " +
					"refunded BIGINT NOT NULL CHECK (refunded >= 0), " +
					"CHECK (refunded <= gross), " +
					"CHECK (gross - refunded <= limit_amount))",
				"CREATE TABLE " + ChargesTable + " (" +
					"budget_id " + d.Key() + " NOT NULL REFERENCES " + BudgetsTable + " (budget_id), " +
					"action_id " + d.Key() + " NOT NULL, " +
					"charged BIGINT NOT NULL CHECK (charged >= 0), " +
					"refunded BIGINT NOT NULL CHECK (refunded >= 0), " +
					"CHECK (refunded <= charged), " +
					"PRIMARY KEY (budget_id, action_id))",
			}
		}),
		// Version 2: rate windows (see windows.go).
		windowStep,
	},
}

// Store is a database of shared budgets. It is safe for concurrent use,
// and any number of processes may open the same database.
type Store struct {
	db *sql.DB
	d  sqlmigrate.Dialect
	// writers serialises this process's SQLite write transactions:
	// SQLite admits one writer at a time, and a Go mutex queues fairly
	// where SQLite's busy handler sleeps in growing steps. Unused for
	// PostgreSQL, whose row locks queue concurrent charges.
	writers sync.Mutex

	qCreate, qGet, qCharge, qRecord, qRefundTotal, qRefundAction, qCharged string
	qw                                                                     windowQueries
	ql                                                                     labelQueries
	qp                                                                     pinQueries
}

// Open prepares db, opened by the host with a driver for dialect d,
// creating or migrating the budget tables (component "budget", versioned
// and migrated as the trace tables are: see sqlstore.Migrate). It does
// not take ownership of db.
func Open(ctx context.Context, db *sql.DB, d sqlstore.Dialect) (*Store, error) {
	if err := d.Valid(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("sqlbudget: Open needs a *sql.DB")
	}
	md := sqlmigrate.Dialect(d)
	for _, m := range []sqlmigrate.Migration{budgetMigration, labelsMigration, pinsMigration} {
		if err := sqlmigrate.Migrate(ctx, db, md, m); err != nil {
			return nil, err
		}
	}
	rebind := md.Rebind
	return &Store{
		db: db, d: md, qw: newWindowQueries(md), ql: newLabelQueries(md), qp: newPinQueries(md),
		qCreate: rebind("INSERT INTO " + BudgetsTable + " (budget_id, limit_amount, gross, refunded) VALUES (?, ?, 0, 0) " +
			"ON CONFLICT (budget_id) DO NOTHING"),
		qGet: rebind("SELECT limit_amount, gross, refunded FROM " + BudgetsTable + " WHERE budget_id = ?"),
		// The charge decision: one conditional UPDATE. The cost must fit
		// what remains (limit − (gross − refunded), which cannot overflow
		// since 0 ≤ gross − refunded ≤ limit), and gross must stay in
		// range. Concurrent charges queue on the row and each re-checks
		// the condition against the balance the previous one left.
		qCharge: rebind("UPDATE " + BudgetsTable + " SET gross = gross + ? " +
			"WHERE budget_id = ? AND ? <= limit_amount - (gross - refunded) AND gross <= ?"),
		qRecord: rebind("INSERT INTO " + ChargesTable + " (budget_id, action_id, charged, refunded) VALUES (?, ?, ?, 0) " +
			"ON CONFLICT (budget_id, action_id) DO NOTHING"),
		// The budget's refunded total grows by at most what is still
		// charged net (the sum over its actions of charged − refunded).
		qRefundTotal: rebind("UPDATE " + BudgetsTable + " SET refunded = refunded + ? WHERE budget_id = ? AND ? <= gross - refunded"),
		// The refund decision: one conditional UPDATE of the action's row.
		qRefundAction: rebind("UPDATE " + ChargesTable + " SET refunded = refunded + ? " +
			"WHERE budget_id = ? AND action_id = ? AND ? <= charged - refunded"),
		qCharged: rebind("SELECT charged, refunded FROM " + ChargesTable + " WHERE budget_id = ? AND action_id = ?"),
	}, nil
}

// lockWriters takes the SQLite writer mutex and returns its release.
func (bs *Store) lockWriters() func() {
	if bs.d != sqlmigrate.SQLite {
		return func() {}
	}
	bs.writers.Lock()
	return bs.writers.Unlock
}

func validID(what, id string) error {
	if len(id) == 0 || len(id) > MaxIDLen {
		return fmt.Errorf("%w: %s must be 1 to %d bytes, got %d", ErrInvalidID, what, MaxIDLen, len(id))
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidID, what, id)
	}
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return fmt.Errorf("%w: %s %q contains NUL", ErrInvalidID, what, id)
		}
	}
	return nil
}

// Create makes a new budget with nothing spent. It fails with ErrExists
// if the id is taken.
func (bs *Store) Create(ctx context.Context, id string, limit kernel.Cost) (*SharedBudget, error) {
	if err := validID("budget id", id); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("%w: negative budget %s", kernel.ErrInvalidCost, limit)
	}
	res, err := bs.create(ctx, id, int64(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlbudget: creating %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("sqlbudget: creating %q: %w", id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %q", ErrExists, id)
	}
	return &SharedBudget{bs: bs, id: id}, nil
}

// create inserts the budget's row, in a READ COMMITTED transaction on
// PostgreSQL (see sqlmigrate.Dialect.TxOptions) so that a racing insert of
// the same id stores nothing instead of failing with a serialization
// error when the database's default isolation is higher.
func (bs *Store) create(ctx context.Context, id string, limit int64) (sql.Result, error) {
	if bs.d != sqlmigrate.Postgres {
		return bs.db.ExecContext(ctx, bs.qCreate, id, limit)
	}
	tx, err := bs.db.BeginTx(ctx, bs.d.TxOptions())
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, bs.qCreate, id, limit)
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return res, tx.Commit()
}

// Open returns an existing budget, or ErrNotFound.
func (bs *Store) Open(ctx context.Context, id string) (*SharedBudget, error) {
	if err := validID("budget id", id); err != nil {
		return nil, err
	}
	b := &SharedBudget{bs: bs, id: id}
	if _, err := b.Snapshot(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// OpenOrCreate returns budget id, creating it with limit if it does not
// exist. Every process of a deployment can call it with the same
// configuration; an existing budget with a different limit is an error
// (ErrLimitMismatch), never silently resized.
func (bs *Store) OpenOrCreate(ctx context.Context, id string, limit kernel.Cost) (*SharedBudget, error) {
	b, err := bs.Create(ctx, id, limit)
	if !errors.Is(err, ErrExists) {
		return b, err
	}
	b = &SharedBudget{bs: bs, id: id}
	s, err := b.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if s.Limit != limit {
		return nil, fmt.Errorf("%w: %q has limit %s, asked %s", ErrLimitMismatch, id, s.Limit, limit)
	}
	return b, nil
}

// SharedBudget is one shared budget; it implements kernel.SharedBudget.
// are kernel.Cost units (thousandths). Every process holding a SharedBudget
// with the same id draws on the same balance.
//
// Charge fails with an error wrapping kernel.CheckBudget when the
// cost does not fit, kernel.ErrDuplicateExecution when actionID was
// already charged, kernel.ErrInvalidCost for a negative cost,
// kernel.ErrOverflow when the gross total would leave int64, ErrNotFound
// for a budget that does not exist. Refund fails with
// kernel.ErrUnknownExecution for an action never charged and
// kernel.ErrRefundTooLarge when the amount exceeds what the action was
// charged minus what it was already refunded. A failed call changes
// nothing.
type SharedBudget struct {
	bs *Store
	id string
}

var _ kernel.SharedBudget = (*SharedBudget)(nil)

// ID returns the budget's id.
func (b *SharedBudget) ID() string { return b.id }

// Charge takes cost from the shared balance for actionID, atomically: one
// transaction whose decision is a single conditional UPDATE of the
// budget's row (the cost must fit the remaining balance), followed by the
// insert of the action's ledger row. Across any number of processes the
// net spend never exceeds the limit (T1) and the gross total only grows.
func (b *SharedBudget) Charge(ctx context.Context, actionID string, cost int64) error {
	if err := validID("action id", actionID); err != nil {
		return err
	}
	if cost < 0 {
		return fmt.Errorf("%w: negative charge %s", kernel.ErrInvalidCost, kernel.Cost(cost))
	}
	unlock := b.bs.lockWriters()
	defer unlock()
	tx, err := b.bs.db.BeginTx(ctx, b.bs.d.TxOptions()) // READ COMMITTED on PostgreSQL: see sqlmigrate.Dialect.TxOptions
	if err != nil {
		return fmt.Errorf("sqlbudget: charge %q: %w", b.id, err)
	}
	defer func() { _ = tx.Rollback() }()
	n, err := affected(tx.ExecContext(ctx, b.bs.qCharge, cost, b.id, cost, math.MaxInt64-cost))
	if err != nil {
		return fmt.Errorf("sqlbudget: charge %q: %w", b.id, err)
	}
	if n == 0 {
		_ = tx.Rollback()
		return b.chargeRefused(ctx, cost)
	}
	n, err = affected(tx.ExecContext(ctx, b.bs.qRecord, b.id, actionID, cost))
	if err != nil {
		return fmt.Errorf("sqlbudget: charge %q: %w", b.id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q in budget %q", kernel.ErrDuplicateExecution, actionID, b.id)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlbudget: charge %q: commit: %w", b.id, err)
	}
	return nil
}

// chargeRefused explains why the conditional UPDATE matched no row.
func (b *SharedBudget) chargeRefused(ctx context.Context, cost int64) error {
	s, err := b.Snapshot(ctx)
	if err != nil {
		return err
	}
	if s.Gross > kernel.Cost(math.MaxInt64-cost) && kernel.Cost(cost) <= s.Limit-(s.Gross-s.Refunded) {
		return fmt.Errorf("%w: gross spend of budget %q overflows", kernel.ErrOverflow, b.id)
	}
	return fmt.Errorf("%w: shared budget %q: cost %s, remaining %s", kernel.CheckBudget, b.id,
		kernel.Cost(cost), s.Limit-(s.Gross-s.Refunded))
}

// Refund gives back amount of what actionID was charged, atomically: one
// transaction of two conditional UPDATEs, the budget's refunded total
// (amount ≤ gross − refunded) and then the action's ledger row (amount ≤
// charged − refunded); if either matches no row, both are rolled back.
// Gross spend is untouched (T4), and no action is ever refunded more than
// it was charged.
func (b *SharedBudget) Refund(ctx context.Context, actionID string, amount int64) error {
	if err := validID("action id", actionID); err != nil {
		return err
	}
	if amount < 0 {
		return fmt.Errorf("%w: negative refund %s", kernel.ErrInvalidCost, kernel.Cost(amount))
	}
	unlock := b.bs.lockWriters()
	defer unlock()
	tx, err := b.bs.db.BeginTx(ctx, b.bs.d.TxOptions()) // READ COMMITTED on PostgreSQL: see sqlmigrate.Dialect.TxOptions
	if err != nil {
		return fmt.Errorf("sqlbudget: refund %q: %w", b.id, err)
	}
	defer func() { _ = tx.Rollback() }()
	// The budget row first, as Charge does, so that the two never wait
	// for each other's rows in opposite orders.
	n, err := affected(tx.ExecContext(ctx, b.bs.qRefundTotal, amount, b.id, amount))
	if err != nil {
		return fmt.Errorf("sqlbudget: refund %q: %w", b.id, err)
	}
	if n == 1 {
		n, err = affected(tx.ExecContext(ctx, b.bs.qRefundAction, amount, b.id, actionID, amount))
		if err != nil {
			return fmt.Errorf("sqlbudget: refund %q: %w", b.id, err)
		}
	}
	if n == 0 {
		_ = tx.Rollback()
		return b.refundRefused(ctx, actionID, amount)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlbudget: refund %q: commit: %w", b.id, err)
	}
	return nil
}

// refundRefused explains why a conditional UPDATE of a refund matched no
// row.
func (b *SharedBudget) refundRefused(ctx context.Context, actionID string, amount int64) error {
	if _, err := b.Snapshot(ctx); err != nil {
		return err
	}
	charged, refunded, ok, err := b.Charged(ctx, actionID)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: %q in budget %q", kernel.ErrUnknownExecution, actionID, b.id)
	default:
		return fmt.Errorf("%w: %q was charged %s, refunded %s, asked %s",
			kernel.ErrRefundTooLarge, actionID, charged, refunded, kernel.Cost(amount))
	}
}

// Snapshot returns the budget's totals as they are in the database now.
func (b *SharedBudget) Snapshot(ctx context.Context) (kernel.BudgetSnapshot, error) {
	var limit, gross, refunded int64
	err := b.bs.db.QueryRowContext(ctx, b.bs.qGet, b.id).Scan(&limit, &gross, &refunded)
	if errors.Is(err, sql.ErrNoRows) {
		return kernel.BudgetSnapshot{}, fmt.Errorf("%w: %q", ErrNotFound, b.id)
	}
	if err != nil {
		return kernel.BudgetSnapshot{}, fmt.Errorf("sqlbudget: reading %q: %w", b.id, err)
	}
	return kernel.BudgetSnapshot{Limit: kernel.Cost(limit), Gross: kernel.Cost(gross), Refunded: kernel.Cost(refunded)}, nil
}

// Charged returns what actionID was charged and refunded so far.
func (b *SharedBudget) Charged(ctx context.Context, actionID string) (charged, refunded kernel.Cost, ok bool, err error) {
	var c, r int64
	err = b.bs.db.QueryRowContext(ctx, b.bs.qCharged, b.id, actionID).Scan(&c, &r)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("sqlbudget: reading %q: %w", b.id, err)
	}
	return kernel.Cost(c), kernel.Cost(r), true, nil
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
