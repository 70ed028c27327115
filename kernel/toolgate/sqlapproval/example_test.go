package sqlapproval_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate/sqlapproval"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Replica r1 holds a DELETE call and publishes its request; an approver
// answers it at replica r2's inbox; a second answer, at r3, is refused;
// r1 picks the approval up to apply it to its gate.
func Example() {
	dir, _ := os.MkdirTemp("", "sqlapproval")
	defer os.RemoveAll(dir)
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "shared.db")+"?_pragma=busy_timeout(10000)")
	defer db.Close()
	store, err := sqlapproval.Open(ctx, db, sqlstore.SQLite)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = store.Publish(ctx, sqlapproval.Request{ID: "req-1", Replica: "r1", Caller: "agent", Tool: "delete_file",
		Tier: claims.TierDelete, ArgumentsSHA256: "sha256:…", Arguments: `{"path":"a.txt"}`, Question: "Delete a.txt?",
		Approvers: []string{"group:ops"}, Awaiting: []string{"group:ops"}, Asked: t0, State: sqlapproval.Pending})

	olga := sqlapproval.Answer{Request: "req-1", By: "https://id.example|olga", Issuer: "https://id.example", Subject: "olga",
		Groups: []string{"ops"}, Approve: true, Reason: "backed up", Replica: "r2"}
	r, _, err := store.Give(ctx, olga, t0)
	fmt.Println(r.State, err)
	olga.Replica = "r3"
	_, _, err = store.Give(ctx, olga, t0)
	fmt.Println(err)

	todo, _ := store.Unapplied(ctx, "r1")
	fmt.Println(len(todo), todo[0].Name, todo[0].Replica)
	// Output:
	// approved <nil>
	// sqlapproval: the request was decided already: request "req-1" was approved already, by https://id.example|olga at replica r2
	// 1 group:ops r2
}
