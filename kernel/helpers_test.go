package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

var ctx = context.Background()

// tb is what both *testing.T and *rapid.T provide.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func mustState(t tb, m map[string]any) kernel.State {
	t.Helper()
	s, err := kernel.NewState(m)
	if err != nil {
		t.Fatalf("NewState: %v", err)
	}
	return s
}

func mustKernel(t tb, cfg kernel.Config) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(cfg)
	if err != nil {
		t.Fatalf("kernel.New: %v", err)
	}
	return k
}

func fixedClockLog(t testing.TB) *trace.Log {
	t.Helper()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(func() time.Time { clock = clock.Add(time.Millisecond); return clock }))
	require.NoError(t, err)
	return log
}

func units(n int64) kernel.Cost { return kernel.Cost(n) * kernel.Unit }

// nonNegative is a blocking invariant: x, when present and an int, is ≥ 0.
func nonNegative(key string) kernel.Invariant {
	return kernel.Invariant{
		Name:        key + " >= 0",
		Description: key + " never goes negative",
		Check: func(s kernel.State) bool {
			i, isInt := s.Int(key)
			return !isInt || i >= 0
		},
		Suggestion: "spend less",
	}
}
