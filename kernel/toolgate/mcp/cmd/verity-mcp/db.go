package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace/sqlstore"
)

// dbSpec is a parsed -db flag: the database/sql driver, its data source
// name and the SQL dialect.
type dbSpec struct {
	Driver  string
	DSN     string
	Dialect sqlstore.Dialect
}

// sqliteParams are the settings a SQLite database shared by several
// processes needs (see sqlstore.SQLite): writers wait for each other
// rather than fail, readers do not wait for writers.
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"

var errDBFlag = errors.New("-db")

// parseDB reads the -db flag: "postgres://…" or "postgresql://…" (a
// PostgreSQL URL, given to pgx as it is) or "sqlite:PATH" (a SQLite file,
// opened with a busy timeout and WAL). Anything else is an error.
func parseDB(s string) (dbSpec, error) {
	switch {
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		u, err := url.Parse(s)
		if err != nil {
			return dbSpec{}, fmt.Errorf("%w: not a PostgreSQL URL: %v", errDBFlag, redact(err))
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return dbSpec{}, fmt.Errorf("%w: PostgreSQL URL without a host", errDBFlag)
		}
		return dbSpec{Driver: "pgx", DSN: s, Dialect: sqlstore.Postgres}, nil
	case strings.HasPrefix(s, "sqlite:"):
		path := strings.TrimPrefix(s, "sqlite:")
		if path == "" {
			return dbSpec{}, fmt.Errorf("%w: sqlite: needs a file path", errDBFlag)
		}
		if strings.ContainsAny(path, "?#\x00") {
			return dbSpec{}, fmt.Errorf("%w: sqlite path %q may not contain '?', '#' or NUL", errDBFlag, path)
		}
		if path == ":memory:" || strings.HasPrefix(path, "file:") {
			return dbSpec{}, fmt.Errorf("%w: sqlite: takes a file path shared by processes, not %q", errDBFlag, path)
		}
		return dbSpec{Driver: "sqlite", DSN: "file:" + path + "?" + sqliteParams, Dialect: sqlstore.SQLite}, nil
	}
	return dbSpec{}, fmt.Errorf("%w: want postgres://… or sqlite:PATH", errDBFlag)
}

// redact keeps a URL parse error from repeating the URL, which may hold a
// password.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// openDB opens the database -db names and returns what the replicas of
// a deployment share through it (see "Replicas" in the package doc): the
// policy's shared budget (toolgate.WithSharedBudget), the calls of its
// rate windows (toolgate.WithSharedWindows) and its callers' flow labels
// (toolgate.WithSharedLabels), all kept by one kernel/sqlbudget Store;
// with -pins first-use, the pins too (c.pins.shared). The returned
// function closes the database.
func (c *config) openDB(ctx context.Context, policy toolgate.Policy, logger *slog.Logger) ([]toolgate.Option, func(), error) {
	spec, err := parseDB(c.db)
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open(spec.Driver, spec.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("-db: %w", err)
	}
	store, err := sqlbudget.Open(ctx, db, spec.Dialect)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("-db: %w", err)
	}
	opts := []toolgate.Option{toolgate.WithSharedWindows(store), toolgate.WithSharedLabels(store)}
	if policy.Shared != nil {
		shared, err := store.OpenOrCreate(ctx, policy.Shared.ID, policy.Shared.Limit)
		if err != nil {
			_ = db.Close()
			return nil, nil, fmt.Errorf("-db: shared budget %q: %w", policy.Shared.ID, err)
		}
		opts = append(opts, toolgate.WithSharedBudget(shared))
		logger.Info("shared budget", "id", policy.Shared.ID, "limit", policy.Shared.Limit)
	}
	c.pins.shared = store
	logger.Info("shared with the replicas on -db", "budget", policy.Shared != nil, "rate_windows", true, "flow_labels", true,
		"pins", c.pins.file == pinsFirstUse)
	return opts, func() { _ = db.Close() }, nil
}
