package trace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/verity-go/verity/trace"
)

// Open a log file, append to it, close it; reopen it (which verifies every
// record) and check it against the head kept from the first session.
func ExampleOpenFile() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "trace-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.log")

	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	log, _ := trace.NewLog(store)
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	for i, action := range []string{"plan", "deploy"} {
		e, err := log.AppendValue(ctx, "agent.step", map[string]any{"action": action}, trace.At(at.Add(time.Duration(i)*time.Second)))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.Seq, e.Kind, string(e.Payload))
	}
	head := log.Head()
	if err := log.Close(); err != nil {
		fmt.Println(err)
		return
	}

	store, err = trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	log, _ = trace.NewLog(store)
	defer log.Close()
	verified, err := log.VerifyAgainst(ctx, head)
	fmt.Println(verified.Size, verified == head, err)
	// Output:
	// 0 agent.step {"action":"plan"}
	// 1 agent.step {"action":"deploy"}
	// 2 true <nil>
}

// A Log stamps, chains and stores entries; Verify checks the whole chain.
func ExampleLog() {
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC) }
	log, _ := trace.NewLog(trace.NewMemory(), trace.WithClock(clock))

	e, _ := log.AppendValue(ctx, "kernel.execute", map[string]any{"action": "deploy", "cost": 1500})
	fmt.Println(e.Seq, e.Kind, string(e.Payload))
	e, _ = log.Append(ctx, "kernel.rollback", []byte(`{ "action": "deploy" }`))
	fmt.Println(e.Seq, e.Kind, string(e.Payload))

	head, err := log.Verify(ctx)
	fmt.Println(head.Size, err)
	// Output:
	// 0 kernel.execute {"action":"deploy","cost":1500}
	// 1 kernel.rollback {"action":"deploy"}
	// 2 <nil>
}

// Next is the pure append step and Verify the pure check; a changed entry
// is reported with its index.
func ExampleVerify() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	e0, h, _ := trace.Next(trace.Head{}, "example.greeting", []byte(`{"hello":"world"}`), at)
	e1, _, _ := trace.Next(h, "example.greeting", []byte(`{"hello":"again"}`), at.Add(time.Second))
	fmt.Println(e0.Hash)

	e0.Payload = []byte(`{"hello":"World"}`)
	_, err := trace.Verify([]trace.Entry{e0, e1})
	var cb *trace.ChainBreakError
	if errors.As(err, &cb) {
		fmt.Println("broken at entry", cb.Index, "field", cb.Field)
	}
	// Output:
	// fc1baad0e4a455b93da4a984027253739cb47824c4264e5d4da15918eef5f605
	// broken at entry 0 field hash
}

// OpenFile verifies a log file as it opens it; a record torn by a crash is
// reported, and RepairFile cuts it off, keeping the bytes aside.
func ExampleRepairFile() {
	dir, _ := os.MkdirTemp("", "trace-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "log")

	store, _ := trace.OpenFile(path, trace.FileOptions{})
	log, _ := trace.NewLog(store)
	for i := 0; i < 3; i++ {
		_, _ = log.AppendValue(context.Background(), "example.step", map[string]int{"i": i})
	}
	_ = store.Close()

	// Simulate a crash in the middle of writing the last record.
	st, _ := os.Stat(path)
	_ = os.Truncate(path, st.Size()-10)

	_, err := trace.OpenFile(path, trace.FileOptions{})
	fmt.Println(errors.Is(err, trace.ErrTornTail))
	res, _ := trace.RepairFile(path)
	fmt.Println("kept", res.Entries, "entries; saved", res.CutBytes, "bytes to", filepath.Base(res.SideFile))
	store, err = trace.OpenFile(path, trace.FileOptions{})
	fmt.Println(err)
	_ = store.Close()
	// Output:
	// true
	// kept 2 entries; saved 127 bytes to log.torn-282
	// <nil>
}
