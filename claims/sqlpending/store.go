package sqlpending

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Table is the table of pending bundles.
const Table = "verity_claims_pending"

var migration = sqlmigrate.Migration{
	Component: "claims_pending",
	Steps: []sqlmigrate.Step{
		// Version 1: one row per waiting bundle, keyed by the bytes of its
		// id (an id need not be UTF-8), holding its record form.
		sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
			return []string{"CREATE TABLE " + Table + " (" +
				"bundle_id " + d.Blob() + " PRIMARY KEY, " +
				"record " + d.Blob() + " NOT NULL)"}
		}),
	},
}

// Store is a claims.PendingStore in a SQL database. It is safe for
// concurrent use, and any number of processes may share the database.
type Store struct {
	db                         *sql.DB
	qPut, qRemove, qGet, qList string
	qSwap, qDelete             string // the conditional forms
}

var _ claims.PendingStore = (*Store)(nil)

// Open prepares db, opened by the host with a driver for dialect d,
// creating or migrating the table (component "claims_pending" in the
// version table verity_schema). It does not take ownership of db.
func Open(ctx context.Context, db *sql.DB, d sqlstore.Dialect) (*Store, error) {
	if err := d.Valid(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("sqlpending: Open needs a *sql.DB")
	}
	md := sqlmigrate.Dialect(d)
	if err := sqlmigrate.Migrate(ctx, db, md, migration); err != nil {
		return nil, err
	}
	r := md.Rebind
	return &Store{db: db,
		qPut:    r("INSERT INTO " + Table + " (bundle_id, record) VALUES (?, ?) ON CONFLICT (bundle_id) DO UPDATE SET record = excluded.record"),
		qRemove: r("DELETE FROM " + Table + " WHERE bundle_id = ?"),
		qGet:    r("SELECT record FROM " + Table + " WHERE bundle_id = ?"),
		qList:   "SELECT record FROM " + Table + " ORDER BY bundle_id",
		qSwap:   r("UPDATE " + Table + " SET record = ? WHERE bundle_id = ? AND record = ?"),
		qDelete: r("DELETE FROM " + Table + " WHERE bundle_id = ? AND record = ?"),
	}, nil
}

// Put implements claims.PendingStore.
func (s *Store) Put(ctx context.Context, p claims.Pending) error {
	b, err := claims.EncodePending(p)
	if err != nil {
		return fmt.Errorf("sqlpending: encoding %q: %w", p.Bundle.ID, err)
	}
	if _, err := s.db.ExecContext(ctx, s.qPut, []byte(p.Bundle.ID), b); err != nil {
		return fmt.Errorf("sqlpending: writing %q: %w", p.Bundle.ID, err)
	}
	return nil
}

// Remove implements claims.PendingStore.
func (s *Store) Remove(ctx context.Context, bundleID string) error {
	if _, err := s.db.ExecContext(ctx, s.qRemove, []byte(bundleID)); err != nil {
		return fmt.Errorf("sqlpending: removing %q: %w", bundleID, err)
	}
	return nil
}

// CompareAndSwap implements claims.PendingStore: one UPDATE whose WHERE
// clause holds old's record form, so that of two swaps from the same
// record, in this process or another, exactly one changes the row.
func (s *Store) CompareAndSwap(ctx context.Context, old, next claims.Pending) error {
	if old.Bundle.ID != next.Bundle.ID {
		return fmt.Errorf("sqlpending: a swap keeps the bundle id (%q, not %q): %w", old.Bundle.ID, next.Bundle.ID, claims.ErrMalformed)
	}
	was, err := claims.EncodePending(old)
	if err != nil {
		return fmt.Errorf("sqlpending: encoding %q: %w", old.Bundle.ID, err)
	}
	b, err := claims.EncodePending(next)
	if err != nil {
		return fmt.Errorf("sqlpending: encoding %q: %w", next.Bundle.ID, err)
	}
	return s.conditional(ctx, "writing", old.Bundle.ID, s.qSwap, b, []byte(old.Bundle.ID), was)
}

// CompareAndDelete implements claims.PendingStore: one DELETE whose WHERE
// clause holds old's record form.
func (s *Store) CompareAndDelete(ctx context.Context, old claims.Pending) error {
	was, err := claims.EncodePending(old)
	if err != nil {
		return fmt.Errorf("sqlpending: encoding %q: %w", old.Bundle.ID, err)
	}
	return s.conditional(ctx, "removing", old.Bundle.ID, s.qDelete, []byte(old.Bundle.ID), was)
}

// conditional runs a statement that changes the row of id or none: none
// is claims.ErrNotPending.
func (s *Store) conditional(ctx context.Context, what, id, query string, args ...any) error {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("sqlpending: %s %q: %w", what, id, err)
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return fmt.Errorf("sqlpending: %s %q: %w", what, id, err)
	case n == 0:
		return fmt.Errorf("%w: %q does not wait as given", claims.ErrNotPending, id)
	}
	return nil
}

// Get implements claims.PendingStore.
func (s *Store) Get(ctx context.Context, bundleID string) (claims.Pending, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, s.qGet, []byte(bundleID)).Scan(&b)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return claims.Pending{}, fmt.Errorf("%w: %q", claims.ErrNotPending, bundleID)
	case err != nil:
		return claims.Pending{}, fmt.Errorf("sqlpending: reading %q: %w", bundleID, err)
	}
	return decode(b)
}

// List implements claims.PendingStore.
func (s *Store) List(ctx context.Context) ([]claims.Pending, error) {
	rows, err := s.db.QueryContext(ctx, s.qList)
	if err != nil {
		return nil, fmt.Errorf("sqlpending: listing: %w", err)
	}
	defer rows.Close()
	out := []claims.Pending{}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("sqlpending: listing: %w", err)
		}
		p, err := decode(b)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlpending: listing: %w", err)
	}
	return out, nil
}

func decode(b []byte) (claims.Pending, error) {
	p, err := claims.DecodePending(b)
	if err != nil {
		return claims.Pending{}, fmt.Errorf("sqlpending: a stored record: %w", err)
	}
	return p, nil
}
