package trace_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/verity-go/verity/trace"
)

var exampleTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// A log's head is signed as a checkpoint and handed to someone else; later
// the log is checked against it. (The key comes from fixed bytes so that
// the output is stable; use GenerateCheckpointKey(nil, name).)
func ExampleCheckpointSigner_Sign() {
	ctx := context.Background()
	skey, vkey, _ := trace.GenerateCheckpointKey(bytes.NewReader(make([]byte, 32)), "example.com/agent-7")
	signer, _ := trace.ParseSignerKey(skey)

	log := trace.NewMemoryLog()
	for i := range 3 {
		log.Append(ctx, "agent.step", fmt.Appendf(nil, `{"i":%d}`, i), trace.At(exampleTime))
	}
	h := log.Head()
	note, _ := signer.Sign(trace.Checkpoint{Origin: "example.com/agent-7", Size: h.Size, Hash: h.Hash})
	fmt.Printf("%s", note[:bytes.Index(note, []byte("\n\n"))+1])

	// The auditor holds vkey and the note.
	verifier, _ := trace.ParseVerifierKey(vkey)
	c, err := verifier.Verify(note, "example.com/agent-7")
	fmt.Println("signature:", err)
	log.Append(ctx, "agent.step", []byte(`{"i":3}`), trace.At(exampleTime))
	_, err = log.VerifyAgainst(ctx, c.Head())
	fmt.Println("extended log:", err)
	// Output:
	// example.com/agent-7
	// 3
	// XS3/P05UgxF6MAG+QkbiB6coDOI198maTBaXZBxCkaU=
	// signature: <nil>
	// extended log: <nil>
}
