package sqlpending_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/claims/sqlpending"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

// A bundle escalates; the process stops; a new Session over the same
// SQLite file lists it and takes the approval that publishes it.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlpending-example")
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "verity.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	policy := claims.DefaultPolicy()
	policy.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"dba"}}
	actor := claims.Context{Actor: "db-agent", Clearance: claims.TierDelete}

	start := func() (*sql.DB, *claims.Session) {
		db, _ := sql.Open("sqlite", dsn)
		store, err := sqlpending.Open(ctx, db, sqlstore.SQLite)
		if err != nil {
			panic(err)
		}
		logs, _ := sqlstore.Open(ctx, db, sqlstore.SQLite)
		ls, _ := logs.OpenOrCreate(ctx, "claims")
		log, _ := trace.NewLog(ls)
		s, _ := claims.NewSession(ctx, log, policy, claims.WithPending(store))
		return db, s
	}

	db, s := start()
	b := claims.NewBundle("drop-v40", claims.ClaimBundle{}.Timestamp, "db-agent", claims.Claim{
		ID: "c1", Statement: "drop the v40 tables", ClaimType: claims.ClaimDecision,
		Uncertainty: claims.Uncertainty{Method: claims.MethodConfidenceScore, Value: 0.1, Interpretation: "sure"},
		RiskTier:    claims.TierDelete, IfWrongCost: "data loss",
	})
	ev, _ := s.Evaluate(ctx, b, actor)
	fmt.Println(ev.Decision)
	db.Close()

	db, s = start() // a restart
	defer db.Close()
	waiting, _ := s.Pending(ctx)
	fmt.Println(len(waiting), waiting[0].Bundle.ID, waiting[0].Awaiting())
	ev, err := s.Approve(ctx, waiting[0].Bundle, waiting[0].Context, "dba", claims.ApprovalApproved, "backup verified")
	fmt.Println(ev.Decision, err)
	_, err = s.Approve(ctx, waiting[0].Bundle, waiting[0].Context, "dba", claims.ApprovalApproved, "again")
	fmt.Println(err)
	// Output:
	// ESCALATE
	// 1 drop-v40 [dba]
	// PUBLISH <nil>
	// claims: bundle is not pending: "drop-v40"
}
