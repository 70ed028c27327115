package sqlbudget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// LabelsTable holds the flow labels the tool gates of a deployment share
// (toolgate.WithSharedLabels): one row per caller, conversation ("" for
// labels attached caller-wide) and label, with the label's end and the
// time it was last attached. LabelClearsTable holds the last
// declassification of each caller's label.
const (
	LabelsTable      = "verity_flow_labels"
	LabelClearsTable = "verity_flow_label_clears"
)

// ErrInvalidLabel is returned for a label, caller or conversation the
// store cannot hold (empty label or caller, longer than MaxIDLen bytes,
// invalid UTF-8, NUL), a negative ttl, or a time outside int64
// nanoseconds since 1970.
var ErrInvalidLabel = errors.New("sqlbudget: invalid flow label")

// forGood is the end of a label carried for good.
const forGood = math.MaxInt64

// labelsMigration is the component "flow_labels": version 1 is the
// labels' table. Its primary key serves every read (caller first) and
// keeps one row per label of a conversation.
var labelsMigration = sqlmigrate.Migration{
	Component: "flow_labels",
	Steps: []sqlmigrate.Step{
		sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
			return []string{
				"CREATE TABLE " + LabelsTable + " (" +
					"caller " + d.Key() + " NOT NULL, " +
					"conversation " + d.Key() + " NOT NULL, " +
					"label " + d.Key() + " NOT NULL, " +
					"until_ns BIGINT NOT NULL, " +
					"since_ns BIGINT NOT NULL, " +
					"PRIMARY KEY (caller, conversation, label))",
				"CREATE INDEX " + LabelsTable + "_until ON " + LabelsTable + " (until_ns)",
				"CREATE TABLE " + LabelClearsTable + " (" +
					"caller " + d.Key() + " NOT NULL, " +
					"label " + d.Key() + " NOT NULL, " +
					"cleared_ns BIGINT NOT NULL, " +
					"approver TEXT NOT NULL, " +
					"reason TEXT NOT NULL, " +
					"PRIMARY KEY (caller, label))",
			}
		}),
	},
}

type labelQueries struct {
	read, attach, clear, tombstone, prune string
}

func newLabelQueries(d sqlmigrate.Dialect) labelQueries {
	return labelQueries{
		// One round trip: the labels carried (kind 0) and the caller's
		// declassifications (kind 1).
		read: d.Rebind("SELECT 0, label, until_ns, '', '' FROM " + LabelsTable +
			" WHERE caller = ? AND conversation IN ('', ?) AND until_ns > ? " +
			"UNION ALL SELECT 1, label, cleared_ns, approver, reason FROM " + LabelClearsTable + " WHERE caller = ?"),
		// The later end wins (forGood is the latest), and the later start.
		attach: d.Rebind("INSERT INTO " + LabelsTable + " AS t (caller, conversation, label, until_ns, since_ns) VALUES (?, ?, ?, ?, ?) " +
			"ON CONFLICT (caller, conversation, label) DO UPDATE SET " +
			"until_ns = CASE WHEN excluded.until_ns > t.until_ns THEN excluded.until_ns ELSE t.until_ns END, " +
			"since_ns = CASE WHEN excluded.since_ns > t.since_ns THEN excluded.since_ns ELSE t.since_ns END"),
		// A declassification clears what was attached at or before it.
		clear: d.Rebind("DELETE FROM " + LabelsTable + " WHERE caller = ? AND label = ? AND since_ns <= ?"),
		tombstone: d.Rebind("INSERT INTO " + LabelClearsTable + " AS t (caller, label, cleared_ns, approver, reason) VALUES (?, ?, ?, ?, ?) " +
			"ON CONFLICT (caller, label) DO UPDATE SET cleared_ns = excluded.cleared_ns, approver = excluded.approver, reason = excluded.reason " +
			"WHERE excluded.cleared_ns > t.cleared_ns"),
		prune: d.Rebind("DELETE FROM " + LabelsTable + " WHERE until_ns <= ?"),
	}
}

// validLabelKey checks a caller, conversation or label: what validID
// checks, except that a conversation may be "" (none).
func validLabelKey(what, s string, empty bool) error {
	if s == "" && empty {
		return nil
	}
	if err := validID(what, s); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidLabel, err)
	}
	return nil
}

func labelTime(at time.Time) (int64, error) {
	if at.Before(minWindowTime) || at.After(maxWindowTime) {
		return 0, fmt.Errorf("%w: time %s out of range", ErrInvalidLabel, at.UTC().Format(time.RFC3339Nano))
	}
	return at.UnixNano(), nil
}

// Labels returns the flow labels caller carries at time at: those
// attached caller-wide and, when conv is not "", those of conversation
// conv, each once with the later of its ends (a zero Until: for good),
// by label; and the last declassification of each of the caller's
// labels, by label. A label is carried while at is before its end. Store
// implements the tool gate's SharedLabels.
func (bs *Store) Labels(ctx context.Context, caller, conv string, at time.Time) ([]gatelog.SharedLabel, []toolgate.LabelClear, error) {
	if err := validLabelKey("caller", caller, false); err != nil {
		return nil, nil, err
	}
	if err := validLabelKey("conversation", conv, true); err != nil {
		return nil, nil, err
	}
	now, err := labelTime(at)
	if err != nil {
		return nil, nil, err
	}
	rows, err := bs.db.QueryContext(ctx, bs.ql.read, caller, conv, now, caller)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlbudget: reading the flow labels of %q: %w", caller, err)
	}
	defer func() { _ = rows.Close() }()
	var out []gatelog.SharedLabel
	var clears []toolgate.LabelClear
	for rows.Next() {
		var kind int
		var label, approver, reason string
		var until int64
		if err := rows.Scan(&kind, &label, &until, &approver, &reason); err != nil {
			return nil, nil, fmt.Errorf("sqlbudget: reading the flow labels of %q: %w", caller, err)
		}
		if kind == 1 {
			clears = append(clears, toolgate.LabelClear{Label: label, At: time.Unix(0, until).UTC(), Approver: approver, Reason: reason})
			continue
		}
		l := gatelog.SharedLabel{Label: label}
		if until != forGood {
			l.Until = time.Unix(0, until).UTC()
		}
		if i := slices.IndexFunc(out, func(o gatelog.SharedLabel) bool { return o.Label == label }); i >= 0 {
			if !out[i].Until.IsZero() && (l.Until.IsZero() || l.Until.After(out[i].Until)) {
				out[i] = l
			}
			continue
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlbudget: reading the flow labels of %q: %w", caller, err)
	}
	slices.SortFunc(out, func(a, b gatelog.SharedLabel) int { return strings.Compare(a.Label, b.Label) })
	slices.SortFunc(clears, func(a, b toolgate.LabelClear) int { return strings.Compare(a.Label, b.Label) })
	return out, clears, nil
}

// Attach records that caller carries labels, in conversation conv ("":
// caller-wide), from at until at+ttl — for good when ttl is 0. A label
// already held keeps the later of its two ends. All the labels are
// written in one transaction.
func (bs *Store) Attach(ctx context.Context, caller, conv string, labels []string, at time.Time, ttl time.Duration) error {
	if err := validLabelKey("caller", caller, false); err != nil {
		return err
	}
	if err := validLabelKey("conversation", conv, true); err != nil {
		return err
	}
	for _, l := range labels {
		if err := validLabelKey("label", l, false); err != nil {
			return err
		}
	}
	if ttl < 0 {
		return fmt.Errorf("%w: negative ttl %s", ErrInvalidLabel, ttl)
	}
	now, err := labelTime(at)
	if err != nil {
		return err
	}
	until := int64(forGood)
	if ttl > 0 {
		if now > math.MaxInt64-int64(ttl) {
			return fmt.Errorf("%w: %s after %s is out of range", ErrInvalidLabel, ttl, at.UTC().Format(time.RFC3339Nano))
		}
		until = now + int64(ttl)
	}
	if len(labels) == 0 {
		return nil
	}
	unlock := bs.lockWriters()
	defer unlock()
	tx, err := bs.db.BeginTx(ctx, bs.d.TxOptions())
	if err != nil {
		return fmt.Errorf("sqlbudget: attaching flow labels to %q: %w", caller, err)
	}
	defer func() { _ = tx.Rollback() }()
	// In label order, so that two transactions attaching the same labels
	// take their rows' locks in one order.
	for _, l := range slices.Sorted(slices.Values(labels)) {
		if _, err := tx.ExecContext(ctx, bs.ql.attach, caller, conv, l, until, now); err != nil {
			return fmt.Errorf("sqlbudget: attaching flow label %q to %q: %w", l, caller, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlbudget: attaching flow labels to %q: commit: %w", caller, err)
	}
	return nil
}

// Clear records c, a declassification of c.Label for caller at c.At
// (toolgate.Gate.Declassify): the label, as attached at or before c.At,
// is removed caller-wide and from every conversation, and c is kept as
// the label's last declassification (a later one replaces it), which
// Labels returns to every gate. Both in one transaction.
func (bs *Store) Clear(ctx context.Context, caller string, c toolgate.LabelClear) error {
	if err := validLabelKey("caller", caller, false); err != nil {
		return err
	}
	if err := validLabelKey("label", c.Label, false); err != nil {
		return err
	}
	if err := validLabelKey("approver", c.Approver, false); err != nil {
		return err
	}
	at, err := labelTime(c.At)
	if err != nil {
		return err
	}
	unlock := bs.lockWriters()
	defer unlock()
	err = func() error {
		tx, err := bs.db.BeginTx(ctx, bs.d.TxOptions())
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, bs.ql.clear, caller, c.Label, at); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, bs.ql.tombstone, caller, c.Label, at, c.Approver, strings.ToValidUTF8(c.Reason, "\uFFFD")); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		return fmt.Errorf("sqlbudget: clearing flow label %q of %q: %w", c.Label, caller, err)
	}
	return nil
}

// PruneLabels deletes the labels that ended at or before before, and
// returns how many. It never changes what Labels returns for a time at
// or after before.
func (bs *Store) PruneLabels(ctx context.Context, before time.Time) (int64, error) {
	var cut int64
	switch {
	case before.Before(minWindowTime):
		return 0, nil
	case before.After(maxWindowTime):
		cut = math.MaxInt64 - 1 // labels for good stay
	default:
		cut = min(before.UnixNano(), math.MaxInt64-1)
	}
	unlock := bs.lockWriters()
	defer unlock()
	n, err := affected(bs.db.ExecContext(ctx, bs.ql.prune, cut))
	if err != nil {
		return 0, fmt.Errorf("sqlbudget: pruning flow labels: %w", err)
	}
	return n, nil
}
