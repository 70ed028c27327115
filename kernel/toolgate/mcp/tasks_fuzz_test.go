package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzTaskReaders: whatever an upstream writes as a tools/call or
// tasks/get result, reading it as a task handle, a task's state, or for
// a state that would mix with the Guard's never panics, and a handle is
// read only from a result that says resultType "task".
func FuzzTaskReaders(f *testing.F) {
	f.Add([]byte(`{"resultType":"task","taskId":"t-1","status":"working","createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":60000}`))
	f.Add([]byte(`{"resultType":"complete","taskId":"t-1","status":"completed","result":{"content":[],"_meta":{"cost":2}}}`))
	f.Add([]byte(`{"resultType":"complete","taskId":"t-1","status":"input_required","inputRequests":{"a":{"method":"elicitation/create"}}}`))
	f.Add([]byte(`{"resultType":"complete","taskId":"t-1","status":"failed","error":{"code":-32603,"message":"x"}}`))
	f.Add([]byte(`{"resultType":"input_required","requestState":"vg2.x","inputRequests":{"verity.approval":{}}}`))
	f.Add([]byte(`{"taskId":1,"ttlMs":-5}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		id, _, ok := taskCreated(&RawResult{JSON: raw})
		if ok {
			var w struct {
				ResultType string `json:"resultType"`
				TaskID     string `json:"taskId"`
			}
			if json.Unmarshal(raw, &w) != nil || w.ResultType != "task" || w.TaskID != id {
				t.Fatalf("read a task handle %q from %s", id, raw)
			}
		}
		_, _ = readTask(raw)
		_ = upstreamMixes(&RawResult{JSON: raw})
		_ = upstreamMixes(&TaskResult{JSON: raw})
	})
}
