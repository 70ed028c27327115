package sqlbudget

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/verity-go/verity/internal/sqlmigrate"
)

// WindowsTable holds one row per call admitted by a rate window.
const WindowsTable = "verity_rate_windows"

// ErrInvalidWindow is returned by Admit for a window it cannot decide: a
// duration that is not positive, a negative limit, or a time outside the
// range of int64 nanoseconds since 1970 (years 1678 to 2262).
var ErrInvalidWindow = errors.New("sqlbudget: invalid rate window")

// windowStep is version 2 of the "budget" component: the rate windows'
// table and the index that both its count and its pruning read.
var windowStep = sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
	return []string{
		"CREATE TABLE " + WindowsTable + " (" +
			"seq " + d.Serial() + ", " +
			"window_key " + d.Key() + " NOT NULL, " +
			"at_ns BIGINT NOT NULL, " +
			"expires_ns BIGINT NOT NULL, " +
			"CHECK (expires_ns > at_ns))",
		"CREATE INDEX " + WindowsTable + "_key_at ON " + WindowsTable + " (window_key, at_ns)",
		"CREATE INDEX " + WindowsTable + "_expires ON " + WindowsTable + " (expires_ns)",
	}
})

// windowQueries are the rate windows' statements, rebound for the
// dialect.
type windowQueries struct {
	lock, prune, count, insert, pruneAll string
}

func newWindowQueries(d sqlmigrate.Dialect) windowQueries {
	return windowQueries{
		lock:     "SELECT pg_advisory_xact_lock($1)",
		prune:    d.Rebind("DELETE FROM " + WindowsTable + " WHERE window_key = ? AND at_ns <= ?"),
		count:    d.Rebind("SELECT count(*) FROM " + WindowsTable + " WHERE window_key = ? AND at_ns > ?"),
		insert:   d.Rebind("INSERT INTO " + WindowsTable + " (window_key, at_ns, expires_ns) VALUES (?, ?, ?)"),
		pruneAll: d.Rebind("DELETE FROM " + WindowsTable + " WHERE expires_ns <= ?"),
	}
}

// windowLockKey is the PostgreSQL advisory lock of one window key: the
// first 8 bytes of SHA-256 over a domain tag and the key. Two keys that
// collide only share a lock (they wait for each other); their counts stay
// apart.
func windowLockKey(key string) int64 {
	h := sha256.New()
	h.Write([]byte("verity.rate_window\x00"))
	h.Write([]byte(key))
	var sum [sha256.Size]byte
	return int64(binary.BigEndian.Uint64(h.Sum(sum[:0])))
}

// Earliest and latest times a window can record: time.Time.UnixNano's
// range.
var (
	minWindowTime = time.Unix(0, math.MinInt64)
	maxWindowTime = time.Unix(0, math.MaxInt64)
)

// Admit decides one call against the rate window key: at most limit calls
// whose times fall in the half-open interval (at − per, at] — and any
// later ones another process recorded — are admitted. seen is how many
// admitted calls the window already held, not counting this one; the call
// is admitted, and recorded at time at, when seen < limit. A refused call
// records nothing.
//
// The count and the insert are one transaction that holds the key's lock
// for its whole length: an advisory transaction lock on the key's hash in
// PostgreSQL (pg_advisory_xact_lock), the database's write lock in SQLite
// (BEGIN IMMEDIATE). However many processes and gates share the database,
// a window never admits more than limit calls. The same transaction
// forgets the key's calls at or before at − per, so a busy key's rows stay
// bounded by what its window can hold; PruneWindows clears idle keys.
//
// Windows of one key should share one duration: a call decided with a
// short per forgets rows that a longer per would still have counted.
// Store implements the tool gate's RateWindows.
func (bs *Store) Admit(ctx context.Context, key string, at time.Time, per time.Duration, limit int) (admitted bool, seen int, err error) {
	if err := validID("window key", key); err != nil {
		return false, 0, err
	}
	switch {
	case per <= 0:
		return false, 0, fmt.Errorf("%w: duration %s is not positive", ErrInvalidWindow, per)
	case limit < 0:
		return false, 0, fmt.Errorf("%w: negative limit %d", ErrInvalidWindow, limit)
	case at.Before(minWindowTime) || at.After(maxWindowTime):
		return false, 0, fmt.Errorf("%w: time %s out of range", ErrInvalidWindow, at.UTC().Format(time.RFC3339Nano))
	}
	now := at.UnixNano()
	// The window's lower bound and the row's expiry, saturated at the
	// ends of int64 rather than wrapped.
	cutoff, expires := int64(math.MinInt64), int64(math.MaxInt64)
	if now >= math.MinInt64+int64(per) {
		cutoff = now - int64(per)
	}
	if now <= math.MaxInt64-int64(per) {
		expires = now + int64(per)
	}
	if expires == now { // only when now is MaxInt64: CHECK (expires_ns > at_ns)
		return false, 0, fmt.Errorf("%w: time %s out of range", ErrInvalidWindow, at.UTC().Format(time.RFC3339Nano))
	}
	unlock := bs.lockWriters()
	defer unlock()
	err = sqlmigrate.WithWriteLock(ctx, bs.db, bs.d, func(q sqlmigrate.Querier) error {
		if bs.d == sqlmigrate.Postgres {
			if _, err := q.ExecContext(ctx, bs.qw.lock, windowLockKey(key)); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		if _, err := q.ExecContext(ctx, bs.qw.prune, key, cutoff); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		var n int64
		if err := q.QueryRowContext(ctx, bs.qw.count, key, cutoff).Scan(&n); err != nil {
			return fmt.Errorf("count: %w", err)
		}
		seen = int(n)
		if n >= int64(limit) {
			return nil
		}
		if _, err := q.ExecContext(ctx, bs.qw.insert, key, now, expires); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		admitted = true
		return nil
	})
	if err != nil {
		return false, 0, fmt.Errorf("sqlbudget: rate window %q: %w", key, err)
	}
	return admitted, seen, nil
}

// PruneWindows deletes the calls of every window whose interval ended at
// or before before (a call admitted at t with duration per ends at
// t + per), and returns how many it deleted. Admit already forgets the
// expired calls of the key it decides; a host calls PruneWindows now and
// then for the keys no call visits any more. It never changes a decision
// of a window whose calls keep one duration.
func (bs *Store) PruneWindows(ctx context.Context, before time.Time) (int64, error) {
	var cut int64
	switch {
	case before.Before(minWindowTime):
		return 0, nil
	case before.After(maxWindowTime):
		cut = math.MaxInt64
	default:
		cut = before.UnixNano()
	}
	unlock := bs.lockWriters()
	defer unlock()
	n, err := affected(bs.db.ExecContext(ctx, bs.qw.pruneAll, cut))
	if err != nil {
		return 0, fmt.Errorf("sqlbudget: pruning rate windows: %w", err)
	}
	return n, nil
}
