package sqlbackend_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/speculative/sqlbackend"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

// A Steward over a SQLite file, its trace in the same file. After a
// restart the approved intent is still pending, the evidence is still
// there, and the database agrees with the trace.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlbackend-example")
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "verity.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"

	start := func() (*sql.DB, *trace.Log, *sqlbackend.Backend, *speculative.Steward) {
		db, _ := sql.Open("sqlite", dsn)
		backend, err := sqlbackend.Open(ctx, db, sqlstore.SQLite)
		if err != nil {
			panic(err)
		}
		logs, _ := sqlstore.Open(ctx, db, sqlstore.SQLite)
		store, _ := logs.OpenOrCreate(ctx, "speculative")
		log, _ := trace.NewLog(store)
		st, err := speculative.NewSteward(ctx, log, backend)
		if err != nil {
			panic(err)
		}
		return db, log, backend, st
	}

	db, _, _, st := start()
	_, _ = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
	id, _ := st.ProposeStatus(ctx, "c1", speculative.StatusSupported, speculative.NonFragility{FeynmanPassed: true})
	_ = st.Approve(ctx, id, speculative.Approval{By: "alice", Human: true})
	db.Close()

	db, log, backend, st := start() // a restart
	defer db.Close()
	p := st.Pending()
	fmt.Println(len(p), p[0].To, p[0].Approval.By)
	t, err := st.Execute(ctx, p[0].ID)
	fmt.Println(t.From, "→", t.To, err)
	fmt.Println(speculative.Compare(ctx, log, backend))
	// Output:
	// 1 supported alice
	// speculative → supported <nil>
	// <nil>
}
