/*
This file checks the SQL Backend. Every test runs on PostgreSQL (when
VERITY_PG_DSN is set; otherwise it skips, naming the variable) and on a
SQLite file.

	the speculative.Backend contract (speculative/backendtest)       TestConformance
	Guard 4: a hypothesis of one session is invisible from another
	and never evidence, whatever it holds                             TestGuard4SessionScoped
	Guard 4 in the schema: no hypothesis without a session            TestSchemaRefusesHypothesisWithoutSession
	Guard 4 in the queries: evidence reads never name hypotheses      TestEvidenceQueriesNeverReadHypotheses (queries_test.go)
	a Steward restarted over the database and its trace continues    TestStewardRestartsOverTheDatabase
	Compare names a change made behind the Steward's back             TestCompareFindsDirectWrites
	random calls match the Memory backend                             TestBackendMatchesMemory (model_test.go)
	kill -9 during concurrent writes loses nothing acknowledged       TestKillDuringWrites (kill_test.go)
	migration is idempotent; errors name their origin once            TestOpenTwice, TestErrorsPrefixedOnce
*/

package sqlbackend_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/speculative/backendtest"
	"github.com/verity-go/verity/speculative/sqlbackend"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

func open(t testing.TB, b sqltest.Backend, db *sql.DB) *sqlbackend.Backend {
	t.Helper()
	be, err := sqlbackend.Open(context.Background(), db, b.Dialect)
	require.NoError(t, err)
	return be
}

// stewardLog opens the log "speculative" in db.
func stewardLog(t testing.TB, b sqltest.Backend, db *sql.DB) *trace.Log {
	t.Helper()
	ctx := context.Background()
	logs, err := sqlstore.Open(ctx, db, b.Dialect)
	require.NoError(t, err)
	store, err := logs.OpenOrCreate(ctx, "speculative")
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	return log
}

func TestConformance(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		backendtest.Run(t, func(t *testing.T) speculative.Backend { return open(t, b, b.OpenNew(t)) })
	})
}

func TestOpenTwice(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		db := b.OpenNew(t)
		open(t, b, db)
		open(t, b, db)
		_, err := sqlbackend.Open(context.Background(), nil, b.Dialect)
		require.Error(t, err)
		_, err = sqlbackend.Open(context.Background(), db, "oracle")
		require.ErrorIs(t, err, sqlstore.ErrDialect)
	})
}

// TestGuard4SessionScoped: hypotheses that look exactly like evidence —
// same claim, success true — are returned to their session only, and
// never as evidence, through the backend or the Steward.
func TestGuard4SessionScoped(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		be := open(t, b, b.OpenNew(t))
		st, err := speculative.NewSteward(ctx, trace.NewMemoryLog(), be)
		require.NoError(t, err)
		require.NoError(t, st.RegisterProposition(ctx, "c1", map[string]any{"text": "t"}))
		looksGrounded := map[string]any{"claim_id": "c1", "success": true, "variance": 0.01}
		rc, err := st.PersistHypothesis(ctx, "alice", speculative.Hypothesis{ClaimID: "c1", Content: looksGrounded})
		require.NoError(t, err)
		require.Equal(t, 1, rc.PropositionLinks.Created)

		hs, err := be.Hypotheses(ctx, "alice")
		require.NoError(t, err)
		require.Len(t, hs, 1)
		assert.Equal(t, speculative.HypothesisRecord{ID: rc.ID, SessionID: "alice", ClaimID: "c1",
			Document: []byte(`{"claim_id":"c1","success":true,"variance":0.01}`), Linked: true}, hs[0])
		for _, other := range []string{"bob", "", "ALICE", "alice ", rc.ID, "c1"} {
			hs, err := be.Hypotheses(ctx, other)
			require.NoError(t, err)
			assert.Empty(t, hs, "session %q sees alice's hypothesis", other)
		}
		docs, err := be.Evidence(ctx, "c1")
		require.NoError(t, err)
		assert.Empty(t, docs, "a hypothesis came back as evidence")
		ev, err := st.Evidence(ctx, "c1")
		require.NoError(t, err)
		assert.Empty(t, ev)
		// And so it cannot promote the claim.
		id, err := st.ProposeStatus(ctx, "c1", speculative.StatusSupported, speculative.NonFragility{FeynmanPassed: true})
		require.NoError(t, err)
		require.NoError(t, st.Approve(ctx, id, speculative.Approval{By: "alice", Human: true}))
		_, err = st.Execute(ctx, id)
		require.ErrorIs(t, err, speculative.ErrPromotion)
	})
}

// TestSchemaRefusesHypothesisWithoutSession: a row written to the
// hypotheses table directly, without a session, is refused by the schema.
func TestSchemaRefusesHypothesisWithoutSession(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := b.OpenNew(t)
		open(t, b, db)
		insert := b.Rebind("INSERT INTO " + sqlbackend.HypothesesTable + " (session_id, hypothesis_id, claim_id, document, intent) VALUES (?, 'h', 'c', ?, 'i')")
		for _, session := range []any{nil, ""} {
			_, err := db.ExecContext(ctx, insert, session, []byte(`"x"`))
			require.Error(t, err, "session %v", session)
		}
		_, err := db.ExecContext(ctx, insert, "s", []byte(`"x"`))
		require.NoError(t, err)
	})
}

// TestStewardRestartsOverTheDatabase: a Steward over the database and a
// trace in the same database; a new pool and a new Steward find the open
// intents with their approvals and everything persisted, and Compare
// agrees.
func TestStewardRestartsOverTheDatabase(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		dsn := b.NewDSN(t)
		db := b.Open(t, dsn)
		st, err := speculative.NewSteward(ctx, stewardLog(t, b, db), open(t, b, db))
		require.NoError(t, err)
		rc, err := st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
		require.NoError(t, err)
		_, err = st.PersistHypothesis(ctx, "s1", speculative.Hypothesis{ClaimID: "c1", Content: "idea"})
		require.NoError(t, err)
		id, err := st.ProposeStatus(ctx, "c1", speculative.StatusSupported, speculative.NonFragility{FeynmanPassed: true})
		require.NoError(t, err)
		require.NoError(t, st.Approve(ctx, id, speculative.Approval{By: "alice", Human: true}))
		require.NoError(t, db.Close())

		db = b.Open(t, dsn)
		be, log := open(t, b, db), stewardLog(t, b, db)
		st, err = speculative.NewSteward(ctx, log, be)
		require.NoError(t, err)
		require.Equal(t, []speculative.PendingIntent{{ID: id, ClaimID: "c1", To: speculative.StatusSupported,
			Checks: speculative.NonFragility{FeynmanPassed: true}, Approval: &speculative.Approval{By: "alice", Human: true}}}, st.Pending())
		tr, err := st.Execute(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, []trace.Hash{rc.ID}, tr.Evidence)
		hs, err := st.Hypotheses(ctx, "s1")
		require.NoError(t, err)
		require.Len(t, hs, 1)
		require.NoError(t, speculative.Compare(ctx, log, be))
		_, err = log.Verify(ctx)
		require.NoError(t, err)
	})
}

// TestCompareFindsDirectWrites: rows changed in the database, not through
// the Steward, are named by Compare.
func TestCompareFindsDirectWrites(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := b.OpenNew(t)
		be, log := open(t, b, db), stewardLog(t, b, db)
		st, err := speculative.NewSteward(ctx, log, be)
		require.NoError(t, err)
		_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true})
		require.NoError(t, err)
		_, err = st.PersistHypothesis(ctx, "s1", speculative.Hypothesis{Content: "idea"})
		require.NoError(t, err)
		require.NoError(t, speculative.Compare(ctx, log, be))

		var me *speculative.MismatchError
		_, err = st.ProposeStatus(ctx, "c2", speculative.StatusRefuted, speculative.NonFragility{})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "INSERT INTO "+sqlbackend.StatusTable+" (claim_id, from_status, to_status, evidence, intent) VALUES ('c2', 'speculative', 'proven', '', 'forged')")
		require.NoError(t, err)
		require.ErrorAs(t, speculative.Compare(ctx, log, be), &me)
		assert.Equal(t, `status of claim "c2"`, me.What)
		assert.Equal(t, "no status", me.Log)
		_, err = db.ExecContext(ctx, "DELETE FROM "+sqlbackend.StatusTable)
		require.NoError(t, err)

		_, err = db.ExecContext(ctx, b.Rebind("UPDATE "+sqlbackend.HypothesesTable+" SET document = ? WHERE session_id = 's1'"), []byte(`"other"`))
		require.NoError(t, err)
		require.ErrorAs(t, speculative.Compare(ctx, log, be), &me)
		assert.Equal(t, `hypothesis 0 of session "s1"`, me.What)

		_, err = db.ExecContext(ctx, b.Rebind("UPDATE "+sqlbackend.EvidenceTable+" SET document = ?"), []byte(`{}`))
		require.NoError(t, err)
		require.ErrorAs(t, speculative.Compare(ctx, log, be), &me)
		assert.Equal(t, `evidence 0 of claim "c1"`, me.What)
	})
}

// TestErrorsPrefixedOnce: the package's errors say "sqlbackend: " once
// (and those it passes on from speculative say "speculative: " once).
func TestErrorsPrefixedOnce(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := b.OpenNew(t)
		be := open(t, b, db)
		_, err := sqlbackend.Open(ctx, nil, b.Dialect)
		errs := []error{err, be.Apply(ctx, speculative.Write{})}
		_, err = be.Applied(ctx, 0, "x")
		errs = append(errs, err)
		require.NoError(t, db.Close())
		_, err = be.Evidence(ctx, "c1")
		errs = append(errs, err)
		_, err = be.Hypotheses(ctx, "s1")
		errs = append(errs, err)
		_, err = be.Status(ctx, "c1")
		errs = append(errs, err)
		for _, err := range errs {
			require.Error(t, err)
			msg := err.Error()
			n := strings.Count(msg, "sqlbackend: ") + strings.Count(msg, "speculative: ")
			assert.Equal(t, 1, n, "%q", msg)
			assert.True(t, strings.HasPrefix(msg, "sqlbackend: ") || strings.HasPrefix(msg, "speculative: "), "%q", msg)
		}
	})
}
