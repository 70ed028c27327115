package mcp

import "time"

// FilterTools exposes filterTools to the tests.
var FilterTools = filterTools

// SetDecisionSyncAfter sets how long a SyncWhileRunning decision waits
// for its tool before its own fsync, and returns the function that puts
// it back.
func SetDecisionSyncAfter(d time.Duration) (restore func()) {
	old := decisionSyncAfter
	decisionSyncAfter = d
	return func() { decisionSyncAfter = old }
}
