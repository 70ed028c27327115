// Pending approvals: the guarantees and the tests that check them.
//
//   - Every PendingStore (memory; a trace.Log over a file) meets the
//     contract of the interface (claims/pendingtest): TestPendingStores;
//     claims/sqlpending runs the same suite on SQLite and PostgreSQL.
//   - Only the bundle that waits takes approvals: a bundle decided since,
//     never evaluated, or given as an older evaluation is refused with
//     ErrNotPending and nothing is recorded: TestApproveOnlyWhatWaits.
//   - After a restart, a Session over the same log and store lists the
//     waiting bundles and accepts their approvals: TestApprovalsAfterRestart.
//   - Sessions sharing one store decide a waiting bundle once: an approval
//     read from a bundle another Session decided or approved meanwhile is
//     refused with ErrNotPending and nothing is recorded (no contradictory
//     decision, no lost approval): TestSharedStoreDecidesOnce; of many
//     concurrent approvals exactly one is recorded:
//     TestConcurrentApprovalsOneRecorded. An approval that cannot be
//     recorded leaves the bundle waiting: TestUnrecordedApprovalStillWaits.
//   - The store can be rebuilt from the Session's log alone:
//     TestRebuildPendingFromTheLogAlone.
//   - A process killed (SIGKILL) while it evaluates and approves loses no
//     acknowledged bundle, its logs verify, and a rebuild from the log
//     agrees with the store: TestKillDuringEvaluations.
//   - DecodePending reads back exactly what EncodePending writes: FuzzDecodePending.

package claims_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/claims/pendingtest"
	"github.com/verity-go/verity/trace"
)

// openFileLog opens (or creates) a log file, cutting off a torn final
// record a kill may have left.
func openFileLog(t testing.TB, path string) *trace.Log {
	t.Helper()
	f, err := trace.OpenFile(path, trace.FileOptions{})
	if errors.Is(err, trace.ErrTornTail) {
		_, err = trace.RepairFile(path)
		require.NoError(t, err)
		f, err = trace.OpenFile(path, trace.FileOptions{})
	}
	require.NoError(t, err)
	log, err := trace.NewLog(f)
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	return log
}

func TestPendingStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		pendingtest.Run(t, func(t *testing.T) (claims.PendingStore, func() claims.PendingStore) {
			return claims.NewMemoryPending(), nil
		})
	})
	t.Run("log file", func(t *testing.T) {
		pendingtest.Run(t, func(t *testing.T) (claims.PendingStore, func() claims.PendingStore) {
			path := filepath.Join(t.TempDir(), "pending.log")
			log := openFileLog(t, path)
			s, err := claims.NewLogPending(context.Background(), log)
			require.NoError(t, err)
			return s, func() claims.PendingStore {
				require.NoError(t, log.Close())
				s, err := claims.NewLogPending(context.Background(), openFileLog(t, path))
				require.NoError(t, err)
				return s
			}
		})
	})
}

func TestApproveOnlyWhatWaits(t *testing.T) {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	s, err := claims.NewSession(ctx, log, pendingtest.Policy())
	require.NoError(t, err)
	c := pendingtest.Context
	approve := func(b claims.ClaimBundle, who string) (claims.Evaluation, error) {
		return s.Approve(ctx, b, c, who, claims.ApprovalApproved, "ok")
	}
	size := func() uint64 { return log.Head().Size }

	// Never evaluated.
	_, err = approve(pendingtest.Bundle("x"), "dba")
	require.ErrorIs(t, err, claims.ErrNotPending)

	ev, err := s.Evaluate(ctx, pendingtest.Bundle("b1"), c)
	require.NoError(t, err)
	require.Equal(t, claims.DecisionEscalate, ev.Decision)
	ps, err := s.Pending(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, []string{"dba"}, ps[0].Awaiting())

	// An older evaluation of a bundle that waits as a later one.
	before := size()
	_, err = approve(pendingtest.Bundle("b1"), "dba")
	require.ErrorIs(t, err, claims.ErrNotPending)
	assert.Contains(t, err.Error(), "later evaluation")
	assert.Equal(t, before, size(), "a refused approval is not recorded")

	done, err := approve(ev.Bundle, "dba")
	require.NoError(t, err)
	require.Equal(t, claims.DecisionPublish, done.Decision)
	ps, err = s.Pending(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps)

	// Decided since.
	before = size()
	_, err = approve(ev.Bundle, "dba")
	require.ErrorIs(t, err, claims.ErrNotPending)
	_, err = approve(done.Bundle, "dba")
	require.ErrorIs(t, err, claims.ErrNotPending)
	assert.Equal(t, before, size())
	assert.Equal(t, 1, countPrefix(err.Error(), "claims: "), err.Error())
}

func countPrefix(s, p string) int {
	n := 0
	for i := 0; i+len(p) <= len(s); i++ {
		if s[i:i+len(p)] == p {
			n++
		}
	}
	return n
}

// TestApprovalsAfterRestart: the Session's log and its pending store in
// files; a new Session over them, after a restart, lists the waiting
// bundle and accepts its approval, once.
func TestApprovalsAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var logs []*trace.Log
	start := func() *claims.Session {
		for _, l := range logs { // a restart: the old process's files are closed (one writer each)
			require.NoError(t, l.Close())
		}
		logs = []*trace.Log{openFileLog(t, filepath.Join(dir, "pending.log")), openFileLog(t, filepath.Join(dir, "claims.log"))}
		store, err := claims.NewLogPending(ctx, logs[0])
		require.NoError(t, err)
		s, err := claims.NewSession(ctx, logs[1], pendingtest.Policy(), claims.WithPending(store))
		require.NoError(t, err)
		return s
	}
	s := start()
	for _, id := range []string{"b1", "b2"} {
		_, err := s.Evaluate(ctx, pendingtest.Bundle(id), pendingtest.Context)
		require.NoError(t, err)
	}

	s = start() // the files are opened again; the first Session is gone
	ps, err := s.Pending(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	require.Equal(t, "b1", ps[0].Bundle.ID)
	ev, err := s.Approve(ctx, ps[0].Bundle, ps[0].Context, "dba", claims.ApprovalApproved, "after the restart")
	require.NoError(t, err)
	assert.Equal(t, claims.DecisionPublish, ev.Decision)
	_, err = s.Approve(ctx, ps[0].Bundle, ps[0].Context, "dba", claims.ApprovalApproved, "again")
	require.ErrorIs(t, err, claims.ErrNotPending)

	s = start()
	ps, err = s.Pending(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, "b2", ps[0].Bundle.ID)
}

// TestRebuildPendingFromTheLogAlone: after any sequence of evaluations
// and approvals, a new store rebuilt from the Session's log holds exactly
// what the Session's store holds; rebuilding over a store that missed
// updates (or holds stale ones) brings it there too.
func TestRebuildPendingFromTheLogAlone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		log := trace.NewMemoryLog()
		store := claims.NewMemoryPending()
		s, err := claims.NewSession(ctx, log, pendingtest.Policy(), claims.WithPending(store))
		require.NoError(t, err)
		stale := claims.NewMemoryPending() // a store that missed some updates
		ids := rapid.SampledFrom([]string{"a", "b", "c"})
		for range rapid.IntRange(0, 20).Draw(t, "steps") {
			id := ids.Draw(t, "id")
			if rapid.Bool().Draw(t, "evaluate") {
				b := pendingtest.Bundle(id)
				if rapid.Bool().Draw(t, "publishable") {
					b.Claims[0].RiskTier = claims.TierReadOnly
				}
				_, err := s.Evaluate(ctx, b, pendingtest.Context)
				require.NoError(t, err)
			} else if p, err := store.Get(ctx, id); err == nil {
				d := rapid.SampledFrom([]claims.ApprovalDecision{claims.ApprovalApproved, claims.ApprovalRejected}).Draw(t, "decision")
				_, err = s.Approve(ctx, p.Bundle, p.Context, "dba", d, "")
				require.NoError(t, err)
			}
			if rapid.Bool().Draw(t, "stale copy") {
				all, _ := store.List(ctx)
				for _, p := range all {
					require.NoError(t, stale.Put(ctx, p))
				}
			}
		}
		want, err := store.List(ctx)
		require.NoError(t, err)
		for _, into := range []claims.PendingStore{claims.NewMemoryPending(), stale} {
			require.NoError(t, claims.RebuildPending(ctx, log, into))
			got, err := into.List(ctx)
			require.NoError(t, err)
			require.Equal(t, len(want), len(got))
			for i := range want {
				a, _ := claims.EncodePending(want[i])
				b, _ := claims.EncodePending(got[i])
				require.Equal(t, string(a), string(b))
			}
		}
	})
}

// TestHelperPendingWorkload is not a test on its own: TestKillDuringEvaluations
// runs the test binary again, and the process lands here.
func TestHelperPendingWorkload(t *testing.T) {
	dir := os.Getenv("VERITY_PENDING_DIR")
	if dir == "" {
		t.Skip("helper process for TestKillDuringEvaluations")
	}
	ctx := context.Background()
	store, err := claims.NewLogPending(ctx, openFileLog(t, filepath.Join(dir, "pending.log")))
	require.NoError(t, err)
	s, err := claims.NewSession(ctx, openFileLog(t, filepath.Join(dir, "claims.log")), pendingtest.Policy(), claims.WithPending(store))
	require.NoError(t, err)
	ack := pendingtest.Ack()
	ack("ready")
	require.NoError(t, pendingtest.Workload(ctx, s, fmt.Sprint(os.Getpid()), ack))
}

// TestKillDuringEvaluations: the Session's log and a LogPending in files,
// a process evaluating and approving from several goroutines killed at a
// random moment, trial after trial on the same files.
func TestKillDuringEvaluations(t *testing.T) {
	trials := 12
	if testing.Short() {
		trials = 4
	}
	ctx := context.Background()
	dir := t.TempDir()
	checked, waiting := 0, 0
	for range trials {
		acks := pendingtest.Kill(t, "TestHelperPendingWorkload", []string{"VERITY_PENDING_DIR=" + dir}, time.Duration(20+rand.IntN(200))*time.Millisecond)
		pendingLog := openFileLog(t, filepath.Join(dir, "pending.log"))
		claimsLog := openFileLog(t, filepath.Join(dir, "claims.log"))
		for _, l := range []*trace.Log{pendingLog, claimsLog} {
			_, err := l.Verify(ctx)
			require.NoError(t, err)
		}
		store, err := claims.NewLogPending(ctx, pendingLog)
		require.NoError(t, err)
		pendingtest.CheckAcks(t, acks, store)
		waiting = pendingtest.CheckRebuild(t, claimsLog, store)
		checked += len(acks)
		require.NoError(t, pendingLog.Close())
		require.NoError(t, claimsLog.Close())
	}
	t.Logf("%d trials, %d acknowledged calls checked, %d bundles wait at the end", trials, checked, waiting)
}

// FuzzDecodePending: DecodePending never panics; what it accepts
// EncodePending writes in a form that decodes and encodes back byte for
// byte.
func FuzzDecodePending(f *testing.F) {
	ev, _ := claims.Evaluate(pendingtest.Bundle("b"), pendingtest.Policy(), pendingtest.Context)
	seed, _ := claims.EncodePending(claims.Pending{Bundle: ev.Bundle, Context: pendingtest.Context})
	f.Add(seed)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"actor":"a","clearance":"DELETE","approval":null,"bundle":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := claims.DecodePending(b)
		if err != nil {
			return
		}
		out, err := claims.EncodePending(p)
		if err != nil {
			t.Fatalf("decoded but does not encode: %v", err)
		}
		// Omitted members take their defaults; after that, one form.
		q, err := claims.DecodePending(out)
		if err != nil {
			t.Fatalf("what EncodePending wrote does not decode: %v\n%s", err, out)
		}
		again, err := claims.EncodePending(q)
		if err != nil || string(again) != string(out) {
			t.Fatalf("round trip:\n in %s\nout %s\nagain %s (%v)", b, out, again, err)
		}
	})
}

// staleStore is a shared store whose next Get runs meanwhile once it has
// read: another Session acts between this Session's read and its update.
type staleStore struct {
	claims.PendingStore
	meanwhile func()
}

func (h *staleStore) Get(ctx context.Context, id string) (claims.Pending, error) {
	p, err := h.PendingStore.Get(ctx, id)
	if f := h.meanwhile; f != nil {
		h.meanwhile = nil
		f()
	}
	return p, err
}

func TestSharedStoreDecidesOnce(t *testing.T) {
	twoApprovers := pendingtest.Policy()
	twoApprovers.Approvers[claims.TierDelete] = []string{"dba", "sre"}
	for _, tc := range []struct {
		name         string
		policy       claims.Policy
		first, stale string // approvers of the first and the stale approval
		firstWaits   bool
	}{
		{"decided meanwhile", pendingtest.Policy(), "dba", "dba", false},
		{"approved meanwhile", twoApprovers, "dba", "sre", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			shared := claims.NewMemoryPending()
			log := trace.NewMemoryLog()
			a, err := claims.NewSession(ctx, log, tc.policy, claims.WithPending(shared))
			require.NoError(t, err)
			hb := &staleStore{PendingStore: shared}
			b, err := claims.NewSession(ctx, log, tc.policy, claims.WithPending(hb))
			require.NoError(t, err)
			ev, err := a.Evaluate(ctx, pendingtest.Bundle("b1"), pendingtest.Context)
			require.NoError(t, err)
			require.Equal(t, claims.DecisionEscalate, ev.Decision)
			var first claims.Evaluation
			hb.meanwhile = func() {
				first, err = a.Approve(ctx, ev.Bundle, pendingtest.Context, tc.first, claims.ApprovalApproved, "ok")
				require.NoError(t, err)
			}
			before := log.Head().Size
			_, err = b.Approve(ctx, ev.Bundle, pendingtest.Context, tc.stale, claims.ApprovalRejected, "no")
			require.ErrorIs(t, err, claims.ErrNotPending)
			require.Equal(t, before+1, log.Head().Size, "only the first approval is recorded")
			got, err := shared.Get(ctx, "b1")
			if !tc.firstWaits {
				require.Equal(t, claims.DecisionPublish, first.Decision)
				require.ErrorIs(t, err, claims.ErrNotPending)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{"sre"}, got.Awaiting(), "the first approval is kept")
			require.NoError(t, claims.RebuildPending(ctx, log, shared))
			again, err := shared.Get(ctx, "b1")
			require.NoError(t, err)
			require.Equal(t, got, again, "the store agrees with the log")
		})
	}
}

func TestConcurrentApprovalsOneRecorded(t *testing.T) {
	ctx := context.Background()
	shared := claims.NewMemoryPending()
	log := trace.NewMemoryLog()
	sessions := make([]*claims.Session, 4)
	for i := range sessions {
		s, err := claims.NewSession(ctx, log, pendingtest.Policy(), claims.WithPending(shared))
		require.NoError(t, err)
		sessions[i] = s
	}
	for round := range 20 {
		ev, err := sessions[0].Evaluate(ctx, pendingtest.Bundle(fmt.Sprint("b", round)), pendingtest.Context)
		require.NoError(t, err)
		before := log.Head().Size
		errs := make([]error, 2*len(sessions))
		var wg sync.WaitGroup
		for i := range errs {
			d := []claims.ApprovalDecision{claims.ApprovalApproved, claims.ApprovalRejected}[i%2]
			wg.Go(func() {
				_, errs[i] = sessions[i/2].Approve(ctx, ev.Bundle, pendingtest.Context, "dba", d, "checked")
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			require.ErrorIs(t, err, claims.ErrNotPending)
		}
		require.Equal(t, 1, won, "round %d", round)
		require.Equal(t, before+1, log.Head().Size, "round %d: one approval recorded", round)
	}
}

func TestUnrecordedApprovalStillWaits(t *testing.T) {
	policy := pendingtest.Policy()
	policy.Approvers[claims.TierDelete] = []string{"dba", "sre"}
	// An approval by dba leaves the bundle waiting for sre (the store
	// swaps it); a rejection decides it (the store removes it).
	for _, d := range []claims.ApprovalDecision{claims.ApprovalApproved, claims.ApprovalRejected} {
		ctx := context.Background()
		store := claims.NewMemoryPending()
		log := trace.NewMemoryLog()
		s, err := claims.NewSession(ctx, log, policy, claims.WithPending(store))
		require.NoError(t, err)
		ev, err := s.Evaluate(ctx, pendingtest.Bundle("b1"), pendingtest.Context)
		require.NoError(t, err)
		want, err := store.Get(ctx, "b1")
		require.NoError(t, err)
		require.NoError(t, log.Close()) // every later append fails
		_, err = s.Approve(ctx, ev.Bundle, pendingtest.Context, "dba", d, "checked")
		require.Error(t, err)
		require.NotErrorIs(t, err, claims.ErrNotPending)
		got, err := store.Get(ctx, "b1")
		require.NoError(t, err, "the bundle still waits after an unrecorded %s", d)
		require.Equal(t, want, got, "it waits as before the unrecorded %s", d)
	}
}
