package trace_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) trace.Store { return trace.NewMemory() })
}

func TestFileConformance(t *testing.T) {
	for name, pol := range map[string]trace.SyncPolicy{"every": trace.SyncEveryAppend, "group": trace.SyncGroup, "manual": trace.SyncManual} {
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) trace.Store {
				s, err := trace.OpenFile(filepath.Join(t.TempDir(), "log"), trace.FileOptions{Sync: pol})
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			})
		})
	}
}
