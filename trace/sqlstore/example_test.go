package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Open a SQLite file, record to a log in it, and verify the log after
// reopening the database as a new process would.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlstore-example")
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "verity.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"

	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		panic(err)
	}
	logs, err := sqlstore.Open(ctx, db, sqlstore.SQLite)
	if err != nil {
		panic(err)
	}
	st, err := logs.Create(ctx, "session-1")
	if err != nil {
		panic(err)
	}
	clock := func() time.Time { return time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC) }
	lg, _ := trace.NewLog(st, trace.WithClock(clock))
	for i := 1; i <= 3; i++ {
		if _, err := lg.AppendValue(ctx, "example.step", map[string]int{"step": i}); err != nil {
			panic(err)
		}
	}
	db.Close()

	// Later, or in another process: open the same file and verify.
	db, _ = sql.Open("sqlite", dsn)
	defer db.Close()
	logs, _ = sqlstore.Open(ctx, db, sqlstore.SQLite)
	for id, err := range logs.IDs(ctx) {
		if err != nil {
			panic(err)
		}
		st, _ := logs.Open(ctx, id)
		head, err := trace.VerifyStore(ctx, st)
		fmt.Println(id, head.Size, err)
	}
	// Output:
	// session-1 3 <nil>
}
