package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/verity-go/verity/kernel"
)

// TestCheckReasonNamesTheCheckOnce: a failed check is worded by its
// reason without the kernel's prefix; the check's name is added only
// where the reason does not begin with it.
func TestCheckReasonNamesTheCheckOnce(t *testing.T) {
	for _, c := range []struct {
		in   kernel.CheckResult
		want string
	}{
		{kernel.CheckResult{Check: kernel.CheckInvariant, Name: "min-replicas", Reason: `kernel: invariant "min-replicas" violated`}, `invariant "min-replicas" violated`},
		{kernel.CheckResult{Check: kernel.CheckBudget, Reason: "kernel: budget exceeded: cost 9, remaining 3.5"}, "budget exceeded: cost 9, remaining 3.5"},
		{kernel.CheckResult{Check: kernel.CheckStepLimit, Reason: "kernel: step limit reached: 5 of 5"}, "step limit reached: 5 of 5"},
		{kernel.CheckResult{Check: kernel.CheckSharedBudget, Reason: "sqlbudget: pool exhausted"}, "shared_budget: sqlbudget: pool exhausted"},
		{kernel.CheckResult{Check: kernel.CheckPrecondition, Name: "owner", Reason: "predicate timed out"}, `precondition "owner": predicate timed out`},
	} {
		assert.Equal(t, c.want, checkReason(c.in))
	}
}
