package sqlbudget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// Tables of the pinned tool definitions shared by the replicas of a
// deployment (verity-mcp -db with -pins first-use): one row per server
// (its pinned instructions and a version that every change raises) and
// one per pinned tool.
const (
	PinServersTable = "verity_pin_servers"
	PinsTable       = "verity_pins"
)

// Errors of the shared pins.
var (
	// ErrPinConflict: RecordRepin's tool is no longer pinned at the
	// approval's Old hash in the database (another replica re-pinned it
	// first). Nothing was recorded.
	ErrPinConflict = errors.New("sqlbudget: the tool's shared pin is not the one the re-pin approves a change from")
	// ErrInvalidPin: a pin or re-pin the database cannot hold (an empty
	// or overlong server or tool name, a hash that is not one).
	ErrInvalidPin = errors.New("sqlbudget: invalid pin")
)

// pinsMigration is the component "pins": version 1 is its two tables.
var pinsMigration = sqlmigrate.Migration{
	Component: "pins",
	Steps: []sqlmigrate.Step{
		sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
			return []string{
				"CREATE TABLE " + PinServersTable + " (" +
					"server " + d.Key() + " PRIMARY KEY, " +
					"instructions " + d.Key() + " NOT NULL, " +
					"version BIGINT NOT NULL CHECK (version >= 1))",
				"CREATE TABLE " + PinsTable + " (" +
					"server " + d.Key() + " NOT NULL REFERENCES " + PinServersTable + " (server), " +
					"tool " + d.Key() + " NOT NULL, " +
					"hash " + d.Key() + " NOT NULL, " +
					// The last re-pin of the tool, "" for a first-use pin.
					"old " + d.Key() + " NOT NULL, " +
					"approver " + d.Key() + " NOT NULL, " +
					"requested_by " + d.Key() + " NOT NULL, " +
					"reason TEXT NOT NULL, " +
					"PRIMARY KEY (server, tool))",
			}
		}),
	},
}

type pinQueries struct {
	claimServer, claimTool, version, tools, repinUpdate, repinInsert, bump string
}

func newPinQueries(d sqlmigrate.Dialect) pinQueries {
	return pinQueries{
		claimServer: d.Rebind("INSERT INTO " + PinServersTable + " (server, instructions, version) VALUES (?, ?, 1) ON CONFLICT (server) DO NOTHING"),
		claimTool:   d.Rebind("INSERT INTO " + PinsTable + " (server, tool, hash, old, approver, requested_by, reason) VALUES (?, ?, ?, '', '', '', '')"),
		version:     d.Rebind("SELECT version, instructions FROM " + PinServersTable + " WHERE server = ?"),
		tools:       d.Rebind("SELECT tool, hash, old, approver, requested_by, reason FROM " + PinsTable + " WHERE server = ? ORDER BY tool"),
		// The re-pin decision: one conditional UPDATE (compare and set on
		// the hash the approver saw pinned).
		repinUpdate: d.Rebind("UPDATE " + PinsTable + " SET hash = ?, old = ?, approver = ?, requested_by = ?, reason = ? " +
			"WHERE server = ? AND tool = ? AND hash = ?"),
		repinInsert: d.Rebind("INSERT INTO " + PinsTable + " (server, tool, hash, old, approver, requested_by, reason) VALUES (?, ?, ?, '', ?, ?, ?) " +
			"ON CONFLICT (server, tool) DO NOTHING"),
		bump: d.Rebind("UPDATE " + PinServersTable + " SET version = version + 1 WHERE server = ?"),
	}
}

func validPin(what, s string) error {
	if err := validID(what, s); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPin, err)
	}
	return nil
}

func validHash(pointer, h string, empty bool) error {
	if h == "" && empty || gatelog.ValidHash(h) {
		return nil
	}
	return fmt.Errorf("%w: %s %.80q is not sha256: and 64 lower-case hex digits", ErrInvalidPin, pointer, h)
}

// ClaimPins records first, a server's first-use pins (its Server, Tools
// and Instructions), unless pins of that server are recorded already,
// and returns the server's pins as recorded — first's, or those of the
// replica that claimed first — with the version of the server's pins.
// However many replicas claim at once, one set of pins wins and every
// replica gets it.
func (bs *Store) ClaimPins(ctx context.Context, first gatelog.Pin) (gatelog.Pin, []gatelog.Repin, int64, error) {
	if err := validPin("server", first.Server); err != nil {
		return gatelog.Pin{}, nil, 0, err
	}
	if err := validHash("instructions", first.Instructions, true); err != nil {
		return gatelog.Pin{}, nil, 0, err
	}
	for tool, h := range first.Tools {
		if err := validPin("tool", tool); err != nil {
			return gatelog.Pin{}, nil, 0, err
		}
		if err := validHash("tool "+tool, h, false); err != nil {
			return gatelog.Pin{}, nil, 0, err
		}
	}
	unlock := bs.lockWriters()
	err := func() error {
		tx, err := bs.db.BeginTx(ctx, bs.d.TxOptions())
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		n, err := affected(tx.ExecContext(ctx, bs.qp.claimServer, first.Server, first.Instructions))
		if err != nil {
			return err
		}
		if n == 1 {
			for tool, h := range first.Tools {
				if _, err := tx.ExecContext(ctx, bs.qp.claimTool, first.Server, tool, h); err != nil {
					return err
				}
			}
		}
		return tx.Commit()
	}()
	unlock()
	if err != nil {
		return gatelog.Pin{}, nil, 0, fmt.Errorf("sqlbudget: claiming the pins of server %q: %w", first.Server, err)
	}
	p, repins, v, ok, err := bs.LoadPins(ctx, first.Server)
	if err == nil && !ok {
		err = fmt.Errorf("sqlbudget: the pins of server %q vanished after being claimed", first.Server)
	}
	return p, repins, v, err
}

// LoadPins returns the server's pins as the database holds them (a
// first-use gatelog.Pin of every pinned tool's present hash), the last
// re-pin of each tool re-pinned since, by tool, and their version; ok is
// false when no replica claimed the server yet. The tables are read in
// one transaction.
func (bs *Store) LoadPins(ctx context.Context, server string) (p gatelog.Pin, repins []gatelog.Repin, version int64, ok bool, err error) {
	if err := validPin("server", server); err != nil {
		return gatelog.Pin{}, nil, 0, false, err
	}
	err = func() error {
		tx, err := bs.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: isolationForSnapshot(bs.d)})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		var instr string
		switch err := tx.QueryRowContext(ctx, bs.qp.version, server).Scan(&version, &instr); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		ok = true
		p = gatelog.Pin{Server: server, Source: "first_use", Tools: map[string]string{}, Instructions: instr}
		rows, err := tx.QueryContext(ctx, bs.qp.tools, server)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var r gatelog.Repin
			if err := rows.Scan(&r.Tool, &r.New, &r.Old, &r.Approver, &r.RequestedBy, &r.Reason); err != nil {
				return err
			}
			p.Tools[r.Tool] = r.New
			if r.Approver != "" {
				r.Server = server
				repins = append(repins, r)
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return gatelog.Pin{}, nil, 0, false, fmt.Errorf("sqlbudget: reading the pins of server %q: %w", server, err)
	}
	return p, repins, version, ok, nil
}

// isolationForSnapshot is the isolation under which LoadPins reads the
// two tables as of one moment: REPEATABLE READ on PostgreSQL (a
// snapshot), the default on SQLite (serializable).
func isolationForSnapshot(d sqlmigrate.Dialect) sql.IsolationLevel {
	if d == sqlmigrate.Postgres {
		return sql.LevelRepeatableRead
	}
	return sql.LevelDefault
}

// PinVersion returns the version of the server's pins (0 when none are
// recorded): a replica reads it before each call and loads the pins
// again when it changed.
func (bs *Store) PinVersion(ctx context.Context, server string) (int64, error) {
	var v int64
	var instr string
	switch err := bs.db.QueryRowContext(ctx, bs.qp.version, server).Scan(&v, &instr); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("sqlbudget: reading the pins' version of server %q: %w", server, err)
	}
	return v, nil
}

// RecordRepin records a person's re-approval of r.Tool of r.Server, from
// r.Old ("" for a tool with no pin) to r.New, when the database still
// pins it at r.Old — else ErrPinConflict, recording nothing — and
// returns the server's new pins version. The decision is one
// conditional UPDATE (or, for a new tool, an INSERT that a pin of the
// tool refuses) in the transaction that raises the version.
func (bs *Store) RecordRepin(ctx context.Context, r gatelog.Repin) (int64, error) {
	for _, c := range []struct{ what, v string }{{"server", r.Server}, {"tool", r.Tool}, {"approver", r.Approver}} {
		if err := validPin(c.what, c.v); err != nil {
			return 0, err
		}
	}
	if err := validHash("old", r.Old, true); err != nil {
		return 0, err
	}
	if err := validHash("new", r.New, false); err != nil {
		return 0, err
	}
	unlock := bs.lockWriters()
	defer unlock()
	var version int64
	err := func() error {
		tx, err := bs.db.BeginTx(ctx, bs.d.TxOptions())
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		var n int64
		if r.Old == "" {
			n, err = affected(tx.ExecContext(ctx, bs.qp.repinInsert, r.Server, r.Tool, r.New, r.Approver, r.RequestedBy, r.Reason))
		} else {
			n, err = affected(tx.ExecContext(ctx, bs.qp.repinUpdate, r.New, r.Old, r.Approver, r.RequestedBy, r.Reason, r.Server, r.Tool, r.Old))
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: tool %q of server %q from %s", ErrPinConflict, r.Tool, r.Server, cmpNone(r.Old))
		}
		if n, err = affected(tx.ExecContext(ctx, bs.qp.bump, r.Server)); err != nil || n == 0 {
			return cmpErr(err, fmt.Errorf("server %q has no pins", r.Server))
		}
		var instr string
		if err := tx.QueryRowContext(ctx, bs.qp.version, r.Server).Scan(&version, &instr); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		if errors.Is(err, ErrPinConflict) {
			return 0, err
		}
		return 0, fmt.Errorf("sqlbudget: re-pinning tool %q of server %q: %w", r.Tool, r.Server, err)
	}
	return version, nil
}

func cmpNone(h string) string {
	if h == "" {
		return "none"
	}
	return h
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}
