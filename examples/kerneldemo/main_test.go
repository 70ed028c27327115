package main

import (
	"bytes"
	"context"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := `budget 5 units, minimum cost 0.5, at most 10 steps
to ana: sent, spent 1.25
to bo: sent, spent 2.5
to cy: sent, spent 3.75
to di: rejected by invariant at most 3 e-mails
think: rejected, budget exceeded
safe_hover: executed (emergency action, budget left 1.25)
rollback of the last e-mail: refund 1.25, state {"outbox":["ana","bo"],"sent":2}, spent 2.5, steps still 3
second rollback: refused, the state is no longer the one that e-mail produced
trace: 8 entries, verified
replayed state {"outbox":["ana","bo"],"sent":2} equal: true
`
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
