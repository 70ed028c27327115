package trace

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendAtStampsTheGivenInstant(t *testing.T) {
	ctx := context.Background()
	logClock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := NewLog(NewMemory(), WithClock(func() time.Time { return logClock }))
	require.NoError(t, err)
	at := time.Date(2026, 11, 25, 1, 2, 3, 4, time.UTC)
	e, err := l.Append(ctx, "test.at", []byte(`{"b":1,"a":2}`), At(at))
	require.NoError(t, err)
	assert.True(t, e.Time.Equal(at), "At overrides the log's clock: got %v", e.Time)
	assert.Equal(t, `{"a":2,"b":1}`, string(e.Payload), "Append canonicalises")
	e, err = l.AppendValue(ctx, "test.at", map[string]int{"x": 1})
	require.NoError(t, err)
	assert.True(t, e.Time.Equal(logClock), "without At, the log's clock")
}

func TestAppendAfterRefusesAMovedHead(t *testing.T) {
	ctx := context.Background()
	l, err := NewLog(NewMemory())
	require.NoError(t, err)
	h0 := l.Head()
	_, err = l.Append(ctx, "test.after", []byte(`{}`), After(h0))
	require.NoError(t, err)
	_, err = l.Append(ctx, "test.after", []byte(`{}`), After(h0))
	assert.True(t, errors.Is(err, ErrConflict), "a stale head is a conflict: %v", err)
	assert.Equal(t, uint64(1), l.Head().Size, "nothing written on conflict")
}

func TestAppendCopiesACanonicalPayload(t *testing.T) {
	l, err := NewLog(NewMemory())
	require.NoError(t, err)
	p := []byte(`{"a":1}`)
	_, err = l.Append(context.Background(), "test.copy", p)
	require.NoError(t, err)
	p[5] = '2'
	_, err = l.Verify(context.Background())
	assert.NoError(t, err, "changing the caller's bytes after Append cannot change the log")
}

// TestAppendAllocatesOnlyItsCopy: an Append of a canonical payload
// allocates one thing, the copy of the payload the store keeps, with or
// without options (At and After are plain values).
func TestAppendAllocatesOnlyItsCopy(t *testing.T) {
	ctx := context.Background()
	l, err := NewLog(NewMemory())
	require.NoError(t, err)
	p := []byte(`{"a":1}`)
	for i := 0; i < memChunk+10; i++ { // past the first chunk's growth
		_, err := l.Append(ctx, "test.alloc", p)
		require.NoError(t, err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := l.Append(ctx, "test.alloc", p); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 1.0, allocs, "without options")
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	allocs = testing.AllocsPerRun(1000, func() {
		if _, err := l.Append(ctx, "test.alloc", p, At(at), After(l.Head())); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 1.0, allocs, "with At and After")
}

func TestLaterOptionWins(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	at, expected := collect([]AppendOption{At(t1), After(Head{Size: 1}), At(t2), After(Head{Size: 2})})
	assert.Equal(t, t2, at)
	require.NotNil(t, expected)
	assert.Equal(t, uint64(2), expected.Size)
	at, expected = collect(nil)
	assert.True(t, at.IsZero())
	assert.Nil(t, expected, "no After, no expected head")
}
