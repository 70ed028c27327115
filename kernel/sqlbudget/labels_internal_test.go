package sqlbudget

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// FuzzAttachLabels: Attach and Labels on a SQLite database never panic;
// Attach refuses exactly what it cannot hold (an invalid caller,
// conversation or label, a negative ttl, a time or end outside int64
// nanoseconds) with ErrInvalidLabel and changes nothing then; otherwise
// the label is carried at its start and, when it ends, not at its end.
func FuzzAttachLabels(f *testing.F) {
	f.Add("alice", "", "untrusted", int64(0), int64(time.Minute))
	f.Add("alice", "c", "secret", int64(5), int64(0))
	f.Add("", "", "l", int64(0), int64(0))
	f.Add("a", "\xff", "l", int64(0), int64(0))
	f.Add("a", "", "l\x00", int64(0), int64(-1))
	f.Add("a", "", "l", int64(math.MaxInt64-5), int64(time.Hour))
	ctx := context.Background()
	db := sqltest.SQLite(f)
	bs, err := Open(ctx, db, "sqlite")
	if err != nil {
		f.Fatal(err)
	}
	count := func(t *testing.T) int {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM " + LabelsTable).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.Fuzz(func(t *testing.T, caller, conv, label string, atNs, ttlNs int64) {
		at, ttl := time.Unix(0, atNs), time.Duration(ttlNs)
		before := count(t)
		err := bs.Attach(ctx, caller, conv, []string{label}, at, ttl)
		invalid := validID("c", caller) != nil || conv != "" && validID("c", conv) != nil || validID("l", label) != nil ||
			ttl < 0 || ttl > 0 && atNs > math.MaxInt64-ttlNs
		if invalid != (err != nil) {
			t.Fatalf("Attach(%q, %q, %q, %d, %d) = %v, want invalid=%v", caller, conv, label, atNs, ttlNs, err, invalid)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidLabel) {
				t.Fatalf("error %v is not ErrInvalidLabel", err)
			}
			if after := count(t); after != before {
				t.Fatalf("a refused label changed %d rows to %d", before, after)
			}
			return
		}
		got, _, err := bs.Labels(ctx, caller, conv, at)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range got {
			found = found || l.Label == label
		}
		if !found {
			t.Fatalf("label %q attached at %d not carried then: %v", label, atNs, got)
		}
		if ttl > 0 {
			if _, _, err := bs.Labels(ctx, caller, conv, at.Add(ttl)); err != nil {
				t.Fatal(err)
			}
		}
		if err := bs.Clear(ctx, caller, toolgate.LabelClear{Label: label, At: at, Approver: "fuzz"}); err != nil {
			t.Fatal(err)
		}
	})
}
