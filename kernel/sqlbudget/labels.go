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
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// LabelsTable holds the flow labels the tool gates of a deployment share
// (toolgate.WithSharedLabels): one row per caller, conversation ("" for
// labels attached caller-wide) and label, with the label's end.
const LabelsTable = "verity_flow_labels"

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
					"PRIMARY KEY (caller, conversation, label))",
				"CREATE INDEX " + LabelsTable + "_until ON " + LabelsTable + " (until_ns)",
			}
		}),
	},
}

type labelQueries struct {
	read, attach, clear, prune string
}

func newLabelQueries(d sqlmigrate.Dialect) labelQueries {
	return labelQueries{
		read: d.Rebind("SELECT label, until_ns FROM " + LabelsTable +
			" WHERE caller = ? AND conversation IN ('', ?) AND until_ns > ?"),
		// The later end wins; forGood is the latest.
		attach: d.Rebind("INSERT INTO " + LabelsTable + " AS t (caller, conversation, label, until_ns) VALUES (?, ?, ?, ?) " +
			"ON CONFLICT (caller, conversation, label) DO UPDATE SET until_ns = " +
			"CASE WHEN excluded.until_ns > t.until_ns THEN excluded.until_ns ELSE t.until_ns END"),
		clear: d.Rebind("DELETE FROM " + LabelsTable + " WHERE caller = ? AND label = ?"),
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
// by label. A label is carried while at is before its end. Store
// implements the tool gate's SharedLabels.
func (bs *Store) Labels(ctx context.Context, caller, conv string, at time.Time) ([]gatelog.SharedLabel, error) {
	if err := validLabelKey("caller", caller, false); err != nil {
		return nil, err
	}
	if err := validLabelKey("conversation", conv, true); err != nil {
		return nil, err
	}
	now, err := labelTime(at)
	if err != nil {
		return nil, err
	}
	rows, err := bs.db.QueryContext(ctx, bs.ql.read, caller, conv, now)
	if err != nil {
		return nil, fmt.Errorf("sqlbudget: reading the flow labels of %q: %w", caller, err)
	}
	defer func() { _ = rows.Close() }()
	var out []gatelog.SharedLabel
	for rows.Next() {
		var label string
		var until int64
		if err := rows.Scan(&label, &until); err != nil {
			return nil, fmt.Errorf("sqlbudget: reading the flow labels of %q: %w", caller, err)
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
		return nil, fmt.Errorf("sqlbudget: reading the flow labels of %q: %w", caller, err)
	}
	slices.SortFunc(out, func(a, b gatelog.SharedLabel) int { return strings.Compare(a.Label, b.Label) })
	return out, nil
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
		if _, err := tx.ExecContext(ctx, bs.ql.attach, caller, conv, l, until); err != nil {
			return fmt.Errorf("sqlbudget: attaching flow label %q to %q: %w", l, caller, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlbudget: attaching flow labels to %q: commit: %w", caller, err)
	}
	return nil
}

// Clear removes label from caller, caller-wide and in every
// conversation (toolgate.Gate.Declassify).
func (bs *Store) Clear(ctx context.Context, caller, label string) error {
	if err := validLabelKey("caller", caller, false); err != nil {
		return err
	}
	if err := validLabelKey("label", label, false); err != nil {
		return err
	}
	unlock := bs.lockWriters()
	defer unlock()
	if _, err := bs.db.ExecContext(ctx, bs.ql.clear, caller, label); err != nil {
		return fmt.Errorf("sqlbudget: clearing flow label %q of %q: %w", label, caller, err)
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
