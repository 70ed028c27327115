package sqlstorage_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/belief/sqlstorage"
	"github.com/verity-go/verity/trace/sqlstore"
)

// A belief server over a SQLite file; after a restart the session is
// still there, replayed from the database.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlstorage-example")
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "beliefs.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"

	db, _ := sql.Open("sqlite", dsn)
	storage, err := sqlstorage.Open(ctx, db, sqlstore.SQLite)
	if err != nil {
		panic(err)
	}
	// Ids must never repeat: the session takes the first, its events the rest.
	n := 0
	next := func() string {
		n++
		if n == 1 {
			return "incident-7"
		}
		return fmt.Sprintf("event-%d", n-1)
	}
	srv, _ := belief.NewServer(ctx, storage, belief.WithIDs(next))
	sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"disk", "network", "dns"}})
	if err != nil {
		panic(err)
	}
	if _, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "ping", ObservationID: "1", Eliminated: []string{"network"}}); err != nil {
		panic(err)
	}
	srv.Close()
	db.Close()

	// Restart: a new pool and a new server on the same file.
	db, _ = sql.Open("sqlite", dsn)
	defer db.Close()
	storage, _ = sqlstorage.Open(ctx, db, sqlstore.SQLite)
	srv, _ = belief.NewServer(ctx, storage)
	defer srv.Close()
	sess, _ = srv.Session(ctx, "incident-7")
	snap, _ := sess.Snapshot(ctx)
	ids, _ := storage.List(ctx)
	fmt.Println(ids, snap.Survivors)
	// Output:
	// [incident-7] [disk dns]
}
