// Package pendingtest is the conformance suite for claims.PendingStore
// implementations, and the kill -9 harness their durability tests share.
//
// Run(t, open) checks the contract documented on the interface against
// fresh stores from open; when open also returns a reopen function (a
// durable store), it checks that a reopened store holds what the first
// one was left with. Kill, Workload and CheckAcks run a Session over a
// store in a child process, kill it at a random moment and check what it
// acknowledged.
package pendingtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/verity-go/verity/claims"
)

// Open returns a new, empty store, and a function that opens the same
// store again (as after a restart), or nil for a store that does not
// outlive its process.
type Open func(t *testing.T) (store claims.PendingStore, reopen func() claims.PendingStore)

// Run runs every check as a subtest of t.
func Run(t *testing.T, open Open) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, Open)
	}{
		{"EmptyStore", emptyStore},
		{"PutGetListRemove", putGetListRemove},
		{"PutReplaces", putReplaces},
		{"CopiesOut", copiesOut},
		{"WildValuesRoundTrip", wildValuesRoundTrip},
		{"ConcurrentPuts", concurrentPuts},
		{"SwapsOnlyWhatWaits", swapsOnlyWhatWaits},
		{"ConcurrentSwapsOneWins", concurrentSwapsOneWins},
		{"SurvivesReopen", survivesReopen},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open) })
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Bundle is a bundle that waits for the approver "dba" (with
// Policy(), it escalates).
func Bundle(id string) claims.ClaimBundle {
	return claims.NewBundle(id, t0, "agent", claims.Claim{
		ID: "c-" + id, Statement: "drop table " + id, ClaimType: claims.ClaimDecision,
		EvidencePointers: []claims.EvidencePointer{},
		Uncertainty:      claims.Uncertainty{Method: claims.MethodConfidenceScore, Value: 0.1, Interpretation: "sure", GateRecommendation: claims.RecommendExecute},
		RiskTier:         claims.TierDelete, IfWrongCost: "data loss",
	})
}

// Policy requires the approver "dba" for DELETE claims.
func Policy() claims.Policy {
	p := claims.DefaultPolicy()
	p.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"dba"}}
	return p
}

// Context has the clearance the bundles of Bundle need.
var Context = claims.Context{Actor: "db-agent", Clearance: claims.TierDelete}

// escalated evaluates Bundle(id): a Pending that waits for "dba".
func escalated(t *testing.T, id string) claims.Pending {
	t.Helper()
	ev, err := claims.Evaluate(Bundle(id), Policy(), Context)
	if err != nil || ev.Decision != claims.DecisionEscalate {
		t.Fatalf("evaluating %s: %v, %v", id, ev.Decision, err)
	}
	return claims.Pending{Bundle: ev.Bundle, Context: Context}
}

// same compares two pendings by their record form.
func same(t *testing.T, what string, got, want claims.Pending) {
	t.Helper()
	g, err := claims.EncodePending(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := claims.EncodePending(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func list(t *testing.T, s claims.PendingStore, want ...claims.Pending) {
	t.Helper()
	got, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("List returned %d bundles, want %d", len(got), len(want))
	}
	for i := range want {
		same(t, fmt.Sprintf("List()[%d]", i), got[i], want[i])
	}
}

func emptyStore(t *testing.T, open Open) {
	s, _ := open(t)
	list(t, s)
	if _, err := s.Get(context.Background(), "nope"); !errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("Get of a missing bundle: %v, want ErrNotPending", err)
	}
	if err := s.Remove(context.Background(), "nope"); err != nil {
		t.Fatalf("Remove of a missing bundle: %v", err)
	}
}

func putGetListRemove(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	b, a, c := escalated(t, "b"), escalated(t, "a"), escalated(t, "c")
	for _, p := range []claims.Pending{b, a, c} {
		if err := s.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	list(t, s, a, b, c)
	got, err := s.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Get(b)", got, b)
	if aw := got.Awaiting(); len(aw) != 1 || aw[0] != "dba" {
		t.Fatalf("Awaiting() = %q", aw)
	}
	if err := s.Remove(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("Get after Remove: %v, want ErrNotPending", err)
	}
	list(t, s, a, c)
}

func putReplaces(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	p := escalated(t, "a")
	if err := s.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Bundle.Reason = "changed"
	p.Context.Actor = "other"
	if err := s.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	list(t, s, p)
}

func copiesOut(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	p := escalated(t, "a")
	if err := s.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	want := escalated(t, "a")
	p.Bundle.Claims[0].Statement = "changed after Put"
	got, _ := s.Get(ctx, "a")
	same(t, "after changing the bundle given to Put", got, want)
	got.Bundle.Claims[0].Statement = "changed after Get"
	got.Bundle.RequiredApprovals[0] = "mallory"
	again, _ := s.Get(ctx, "a")
	same(t, "after changing the bundle Get returned", again, want)
}

// wildValuesRoundTrip: whatever a Session may evaluate — ids that are not
// UTF-8, numbers outside [0,1], NaN, far times — comes back unchanged.
func wildValuesRoundTrip(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	p := escalated(t, "w")
	p.Bundle.ID = "\xff\xfe"
	p.Bundle.Claims[0].Uncertainty.Value = math.NaN()
	p.Bundle.Claims[0].Statement = "bad \xc3"
	p.Bundle.Timestamp = time.Date(12000, 1, 1, 0, 0, 0, 5, time.UTC)
	p.Context = claims.Context{Actor: "\x00\xff", Clearance: claims.TierPrivilege}
	if err := s.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "\xff\xfe")
	if err != nil {
		t.Fatal(err)
	}
	same(t, "wild values", got, p)
	list(t, s, p)
}

func concurrentPuts(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	var wg sync.WaitGroup
	const n = 16
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("b%02d", i)
			if errs[i] = s.Put(ctx, escalated(t, id)); errs[i] == nil && i%2 == 0 {
				errs[i] = s.Remove(ctx, id)
			}
		})
	}
	wg.Wait()
	var want []claims.Pending
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if i%2 == 1 {
			want = append(want, escalated(t, fmt.Sprintf("b%02d", i)))
		}
	}
	list(t, s, want...)
}

// swapsOnlyWhatWaits: CompareAndSwap and CompareAndDelete change nothing
// unless the bundle given is, by its record form, the one that waits.
func swapsOnlyWhatWaits(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	p := escalated(t, "a")
	other := p
	other.Context.Actor = "someone else"
	if err := s.CompareAndSwap(ctx, p, other); !errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("CompareAndSwap of a missing bundle: %v, want ErrNotPending", err)
	}
	if err := s.CompareAndDelete(ctx, p); !errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("CompareAndDelete of a missing bundle: %v, want ErrNotPending", err)
	}
	list(t, s)
	if err := s.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.CompareAndSwap(ctx, other, p); !errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("CompareAndSwap from another record: %v, want ErrNotPending", err)
	}
	if err := s.CompareAndDelete(ctx, other); !errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("CompareAndDelete of another record: %v, want ErrNotPending", err)
	}
	list(t, s, p)
	moved := escalated(t, "b")
	if err := s.CompareAndSwap(ctx, p, moved); err == nil || errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("CompareAndSwap to another id: %v, want an error that is not ErrNotPending", err)
	}
	list(t, s, p)
	if err := s.CompareAndSwap(ctx, p, other); err != nil {
		t.Fatal(err)
	}
	list(t, s, other)
	if err := s.CompareAndDelete(ctx, other); err != nil {
		t.Fatal(err)
	}
	list(t, s)
}

// concurrentSwapsOneWins: of several CompareAndSwap and CompareAndDelete
// calls from the same waiting bundle at once, exactly one succeeds, the
// others get ErrNotPending, and the store holds the winner's result.
func concurrentSwapsOneWins(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	for round := range 4 {
		p := escalated(t, fmt.Sprintf("r%d", round))
		if err := s.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
		const n = 8
		nexts := make([]claims.Pending, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			nexts[i] = p
			nexts[i].Context.Actor = fmt.Sprintf("actor %d", i)
			wg.Go(func() {
				if i == round { // one contender removes the bundle
					errs[i] = s.CompareAndDelete(ctx, p)
					return
				}
				errs[i] = s.CompareAndSwap(ctx, p, nexts[i])
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: contenders %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, claims.ErrNotPending):
				t.Fatalf("round %d: contender %d: %v, want ErrNotPending", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no contender won", round)
		}
		got, err := s.Get(ctx, p.Bundle.ID)
		switch {
		case winner == round && !errors.Is(err, claims.ErrNotPending):
			t.Fatalf("round %d: the deletion won, but Get: %v", round, err)
		case winner != round && err != nil:
			t.Fatal(err)
		case winner != round:
			same(t, fmt.Sprintf("round %d: the winner's bundle", round), got, nexts[winner])
		}
	}
}

func survivesReopen(t *testing.T, open Open) {
	ctx := context.Background()
	s, reopen := open(t)
	if reopen == nil {
		t.Skip("the store does not outlive its process")
	}
	a, b := escalated(t, "a"), escalated(t, "b")
	for _, p := range []claims.Pending{a, b} {
		if err := s.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	again := reopen()
	list(t, again, b)
	if _, err := again.Get(ctx, "a"); !errors.Is(err, claims.ErrNotPending) {
		t.Fatalf("a removed bundle is back after reopening: %v", err)
	}
}
