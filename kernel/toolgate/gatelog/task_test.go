package gatelog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

const validTask = `{"session":"toolgate:alice","caller":"alice","call_id":"c1","exec_id":"e1","tool":"render","rule":"#0","reserved":true,"cost":5000,"task_id":"task-1","owner":"iss|alice","expires":"2030-01-01T00:00:00Z"}`

// TestDecodeTask: a task entry names its call, execution, rule and task;
// anything less, a negative cost or an unknown member is refused.
func TestDecodeTask(t *testing.T) {
	v, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindTask, Payload: []byte(validTask)})
	require.NoError(t, err)
	tk := v.(gatelog.Task)
	assert.Equal(t, "task-1", tk.TaskID)
	require.NotNil(t, tk.Expires)
	for name, payload := range map[string]string{
		"no task id":     `{"session":"s","caller":"a","call_id":"c","exec_id":"e","tool":"t","rule":"#0","reserved":true,"cost":1,"task_id":""}`,
		"no exec":        `{"session":"s","caller":"a","call_id":"c","exec_id":"","tool":"t","rule":"#0","reserved":true,"cost":1,"task_id":"x"}`,
		"negative cost":  `{"session":"s","caller":"a","call_id":"c","exec_id":"e","tool":"t","rule":"#0","reserved":true,"cost":-1,"task_id":"x"}`,
		"unknown member": `{"session":"s","caller":"a","call_id":"c","exec_id":"e","tool":"t","rule":"#0","reserved":true,"cost":1,"task_id":"x","more":1}`,
		"missing":        `{"session":"s"}`,
	} {
		_, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindTask, Payload: []byte(payload)})
		assert.ErrorIs(t, err, gatelog.ErrDecode, name)
	}
}

// FuzzDecodeTask: any payload decodes as a task or is ErrDecode, never a
// panic; what decodes writes back to canonical JSON that decodes to the
// same value.
func FuzzDecodeTask(f *testing.F) {
	f.Add([]byte(validTask))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"session":"s","caller":"a","call_id":"c","exec_id":"e","tool":"t","rule":"default","reserved":false,"cost":0,"task_id":"x"}`))
	f.Fuzz(func(t *testing.T, payload []byte) { decodeRoundTrips(t, gatelog.KindTask, payload) })
}
