package sqlbackend_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/killtest"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// killWorkers is how many goroutines of the helper process write at once.
const killWorkers = 4

// TestHelperStewardWorkload is not a test on its own: TestKillDuringWrites
// runs the test binary again, and the process lands here. It opens a
// Steward over the database and the log in it (finishing what the last
// process left), says "ready", and writes from several goroutines until
// it is killed, printing one line per acknowledged call:
//
//	E <claim> <evidence id>      evidence persisted
//	H <session> <hypothesis id>  hypothesis persisted
//	P <intent>                   status intent proposed
//	X <intent>                   about to execute or reject it
//	S <intent>                   status write executed
func TestHelperStewardWorkload(t *testing.T) {
	db, dialect := sqltest.OpenFromEnv(t, "TestKillDuringWrites")
	ctx := context.Background()
	b := sqltest.Backend{Dialect: dialect}
	st, err := speculative.NewSteward(ctx, stewardLog(t, b, db), open(t, b, db))
	require.NoError(t, err)
	ack := killtest.Ack()
	pid := os.Getpid()
	for g := range killWorkers {
		require.NoError(t, st.RegisterProposition(ctx, fmt.Sprintf("c%d", g), map[string]any{"text": "p"}))
	}
	ack("ready")
	var wg sync.WaitGroup
	for g := range killWorkers {
		wg.Go(func() {
			claim, session := fmt.Sprintf("c%d", g), fmt.Sprintf("s%d", g)
			for i := 0; ; i++ {
				rc, err := st.PersistEvidence(ctx, map[string]any{"claim_id": claim, "success": true, "variance": 0.01, "pid": pid, "i": i})
				if err != nil {
					panic(err)
				}
				ack("E %s %s", claim, rc.ID)
				h, err := st.PersistHypothesis(ctx, session, speculative.Hypothesis{ClaimID: claim, Content: map[string]any{"pid": pid, "i": i}})
				if err != nil {
					panic(err)
				}
				ack("H %s %s", session, h.ID)
				to := []speculative.Status{speculative.StatusSupported, speculative.StatusRefuted}[i%2]
				id, err := st.ProposeStatus(ctx, claim, to, speculative.NonFragility{FeynmanPassed: true})
				if err != nil {
					panic(err)
				}
				ack("P %s", id)
				if i%3 == 2 {
					continue // left pending
				}
				if err := st.Approve(ctx, id, speculative.Approval{By: "alice", Human: true}); err != nil {
					panic(err)
				}
				ack("X %s", id)
				if _, err := st.Execute(ctx, id); err == nil {
					ack("S %s", id)
				}
			}
		})
	}
	wg.Wait()
}

// TestKillDuringWrites: a process writing from several goroutines through
// a Steward over the database (its trace in the same database) is killed
// with SIGKILL at a random moment, again and again on the same database.
// After each kill a new Steward opens over it: every acknowledged
// evidence document and hypothesis is there, every acknowledged status
// write is applied, every acknowledged proposal not handed to Execute is
// pending, the trace verifies and Compare finds the database and the
// trace in agreement.
func TestKillDuringWrites(t *testing.T) {
	trials := 12
	if testing.Short() {
		trials = 5
	}
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		dsn := b.NewDSN(t)
		finished := 0 // restarts that finished an interrupted write
		for trial := range trials {
			acks := killHelper(t, b, dsn, time.Duration(20+rand.IntN(300))*time.Millisecond)
			db := b.Open(t, dsn)
			be, log := open(t, b, db), stewardLog(t, b, db)
			_, err := log.Verify(ctx)
			require.NoError(t, err, "trial %d", trial)
			before := log.Head()
			st, err := speculative.NewSteward(ctx, log, be)
			require.NoError(t, err, "trial %d", trial)
			if log.Head() != before {
				finished++
			}
			require.NoError(t, speculative.Compare(ctx, log, be), "trial %d", trial)
			checkAcks(t, acks, st, be)
			require.NoError(t, db.Close())
		}
		t.Logf("%d trials, %d restarts finished an interrupted write", trials, finished)
	})
}

// killHelper starts the helper process on dsn, kills it after the given
// time from its "ready", waits until the database has settled what it had
// in flight, and returns the lines it acknowledged.
func killHelper(t *testing.T, b sqltest.Backend, dsn string, after time.Duration) [][]string {
	t.Helper()
	acks := killtest.Kill(t, "TestHelperStewardWorkload", b.HelperEnv(dsn), after)
	b.AwaitHelpers(t, dsn)
	return acks
}

func checkAcks(t *testing.T, acks [][]string, st *speculative.Steward, be speculative.Backend) {
	t.Helper()
	ctx := context.Background()
	pending := map[string]bool{}
	for _, p := range st.Pending() {
		pending[p.ID] = true
	}
	handed := map[string]bool{}
	for _, a := range acks {
		if a[0] == "X" || a[0] == "S" {
			handed[a[1]] = true
		}
	}
	n := 0
	for _, a := range acks {
		switch a[0] {
		case "E":
			docs, err := be.Evidence(ctx, a[1])
			require.NoError(t, err)
			found := false
			for _, d := range docs {
				found = found || trace.Hash(sha256.Sum256(d)).String() == a[2]
			}
			require.True(t, found, "acknowledged evidence %s of %s is missing", a[2], a[1])
		case "H":
			hs, err := be.Hypotheses(ctx, a[1])
			require.NoError(t, err)
			found := false
			for _, h := range hs {
				found = found || h.ID == a[2]
			}
			require.True(t, found, "acknowledged hypothesis %s of %s is missing", a[2], a[1])
		case "S":
			ok, err := be.Applied(ctx, speculative.WriteKindStatus, a[1])
			require.NoError(t, err)
			require.True(t, ok, "acknowledged status write %s is missing", a[1])
		case "P":
			if !handed[a[1]] {
				require.True(t, pending[a[1]], "acknowledged intent %s is not pending", a[1])
			}
		}
		n++
	}
	t.Logf("%d acknowledged calls checked", n)
}
