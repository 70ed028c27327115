package backendtest_test

import (
	"testing"

	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/speculative/backendtest"
)

func TestMemory(t *testing.T) {
	backendtest.Run(t, func(*testing.T) speculative.Backend { return speculative.NewMemory() })
}
