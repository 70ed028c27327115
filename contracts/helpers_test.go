package contracts

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/contracts/ids"
)

func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", rel))
	require.NoError(t, err)
	return b
}

var t0 = time.Date(2026, 3, 2, 10, 20, 0, 0, time.UTC)

func sampleRun() Run {
	project := "checkout-assistant"
	return Run{
		RunID:       "run-1",
		RunType:     RunTypeRCA,
		StartedAt:   t0,
		CompletedAt: t0.Add(70 * time.Second),
		Input:       InputRef{ProjectName: &project, TraceIDs: []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		Runtime: RuntimeRef{
			EngineVersion: "0.4.1", ModelProvider: "openai", ModelName: "gpt-4o-mini",
			PromptTemplateHash: ids.ExcerptHash("prompt"),
			Budget:             DefaultRunBudget(),
			Usage:              Usage{Iterations: 7, DepthReached: 1, ToolCalls: 12, LLMSubcalls: 5, TokensIn: 18000, TokensOut: 2000, CostUSD: 0.02},
		},
		Writeback: WritebackRef{WritebackStatus: WritebackStatusSucceeded},
	}
}
