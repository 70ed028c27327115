// Errors and zero values, and the tests that check them.
//
//   - Every error says "belief: " once, at its start: TestErrorsPrefixedOnce
//     (decoding, replay, storage, the shell) and requireCode (every
//     rejection the rule tests see).
//   - The zero value of every enum-like input is the most restrictive:
//     TestZeroValuesFailClosed.

package belief_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

// assertPrefixedOnce checks that err says "belief: " once, at its start.
func assertPrefixedOnce(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "belief: "), "not prefixed: %q", msg)
	assert.Equal(t, 1, strings.Count(msg, "belief: "), "prefixed more than once: %q", msg)
}

// TestErrorsPrefixedOnce walks the error paths that requireCode does not
// see (every rejection checked by requireCode is checked for its prefix
// there): decoding, replay, storage and the shell's failures.
func TestErrorsPrefixedOnce(t *testing.T) {
	ctx := context.Background()
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	// Decoding.
	_, err := belief.DecodeAuditEntry([]byte(`{`))
	add(err)
	_, err = belief.DecodeAuditEntry([]byte(`{"ts":"yesterday"}`))
	add(err)
	_, err = belief.DecodeAuditEntry([]byte(`{"prev_event_hash":"xyz"}`))
	add(err)
	_, err = belief.DecodeAuditEntry([]byte(`{"seq":9007199254740992,"ts":"2026-01-01T00:00:00Z"}`))
	add(err)
	_, err = belief.DecodeAuditLog([]byte(`[{"a":1,"a":2}]`))
	add(err)
	_, err = belief.DecodeAuditLog([]byte(`[{},{"verb":1}]`))
	add(err)

	// Replay: each failure, a re-executed transition's rejection included.
	ss := newSession(t, "a", "b")
	_, err = ss.elim(t, "s", "o1", "a")
	require.NoError(t, err)
	_, err = belief.Replay(nil)
	add(err)
	bad := append([]belief.AuditEntry(nil), ss.log...)
	bad[1].Payload = json.RawMessage(`{"eliminated":["zz"],"observation_id":"o1","source_id":"s"}`)
	bad[1].EventHash, err = bad[1].ComputeHash()
	require.NoError(t, err)
	_, err = belief.Replay(bad)
	add(err)
	bad[1].Payload = json.RawMessage(`{"eliminated":["a"],"observation_id":"o1","source_id":"s","x":1}`)
	bad[1].EventHash, _ = bad[1].ComputeHash()
	_, err = belief.Replay(bad)
	add(err)
	bad[1].Verb = ""
	bad[1].EventHash, _ = bad[1].ComputeHash()
	_, err = belief.Replay(bad)
	add(err)

	// Storage.
	fs, err := belief.NewFileStorage(t.TempDir(), trace.FileOptions{})
	require.NoError(t, err)
	_, err = fs.Create(ctx, "../x")
	add(err)
	_, err = fs.Open(ctx, "nope")
	add(err)
	mem := belief.NewMemoryStorage()
	_, err = mem.Create(ctx, "x")
	require.NoError(t, err)
	_, err = mem.Create(ctx, "x")
	add(err)

	// The shell: a log that does not replay, a closed server.
	srv, err := belief.NewServer(ctx, fs)
	require.NoError(t, err)
	sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b"}})
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	_, err = sess.Snapshot(ctx)
	add(err) // the store is closed
	store, err := fs.Open(ctx, sess.ID())
	require.NoError(t, err)
	l, err := trace.NewLog(store)
	require.NoError(t, err)
	_, err = l.Append(ctx, "belief.eliminate", []byte(`{"not":"an audit entry"}`))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	srv2, err := belief.NewServer(ctx, fs)
	require.NoError(t, err)
	defer srv2.Close()
	_, err = srv2.Session(ctx, sess.ID())
	add(err)
	assert.ErrorContains(t, err, sess.ID(), "the failure names the session")
	_, err = srv.Session(ctx, sess.ID())
	add(err)

	for i, err := range errs {
		t.Run(strconv.Itoa(i), func(t *testing.T) { assertPrefixedOnce(t, err) })
	}
}

// TestZeroValuesFailClosed: the zero value of each enum-like input is the
// most restrictive one. The zero Verb replays nothing, the zero Policy
// refuses force, the zero State accepts no verb, and an error without a
// protocol code (nil included) is INTERNAL, never a success.
func TestZeroValuesFailClosed(t *testing.T) {
	ss := newSession(t, "a", "b")
	log := append([]belief.AuditEntry(nil), ss.log...)
	log[0].Verb = ""
	log[0].EventHash, _ = log[0].ComputeHash()
	_, err := belief.Replay(log)
	var re *belief.ReplayError
	require.ErrorAs(t, err, &re)

	_, r, _, err := ss.s.RequestTermination(belief.TerminationRequest{Context: json.RawMessage(`{"force":true}`)}, belief.Policy{}, ss.stamps.next())
	require.NoError(t, err)
	assert.False(t, r.Approved, "the zero Policy refuses force")

	var zero belief.State
	_, _, _, err = zero.Eliminate(belief.EliminateRequest{SourceID: "s", ObservationID: "o"}, ss.stamps.next())
	requireCode(t, err, belief.CodeSessionNotFound)
	assert.Equal(t, belief.CodeInternal, belief.CodeOf(nil))
}
