package sqlbudget_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

// A kernel session whose spending is also limited by a budget kept in a
// database that other processes share.
func ExampleStore_OpenOrCreate() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlbudget-example")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "budget.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		panic(err)
	}
	defer db.Close()

	budgets, err := sqlbudget.Open(ctx, db, sqlstore.SQLite)
	if err != nil {
		panic(err)
	}
	shared, err := budgets.OpenOrCreate(ctx, "team-alpha", 5*kernel.Unit)
	if err != nil {
		panic(err)
	}

	k, _ := kernel.New(kernel.Config{Budget: 100 * kernel.Unit, MinActionCost: kernel.Unit})
	initial, _ := kernel.NewState(map[string]any{"calls": 0})
	sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, initial, kernel.WithSharedBudget(shared))
	if err != nil {
		panic(err)
	}
	call := kernel.Action{ID: "call", Cost: 2 * kernel.Unit, Effects: []kernel.Effect{kernel.Increment("calls", value.Int(1))}}
	for i := 0; i < 3; i++ {
		_, err := sess.Execute(ctx, call)
		fmt.Println("call", i+1, "shared budget exceeded:", errors.Is(err, kernel.CheckBudget))
	}
	s, _ := shared.Snapshot(ctx)
	fmt.Println("shared gross", s.Gross, "of", s.Limit)
	// Output:
	// call 1 shared budget exceeded: false
	// call 2 shared budget exceeded: false
	// call 3 shared budget exceeded: true
	// shared gross 4 of 5
}

// A rate window of two calls a minute, shared by every gate that opens
// the same database: the third call within the minute is refused, and a
// minute after the first one the window admits again.
func ExampleStore_Admit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlbudget-example")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "budget.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	store, err := sqlbudget.Open(ctx, db, sqlstore.SQLite)
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, after := range []time.Duration{0, 20 * time.Second, 40 * time.Second, time.Minute} {
		admitted, seen, err := store.Admit(ctx, "alice|send_mail", start.Add(after), time.Minute, 2)
		if err != nil {
			panic(err)
		}
		fmt.Printf("+%s admitted=%v seen=%d\n", after, admitted, seen)
	}
	// Output:
	// +0s admitted=true seen=0
	// +20s admitted=true seen=1
	// +40s admitted=false seen=2
	// +1m0s admitted=true seen=1
}
