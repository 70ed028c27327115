package gatelog

import (
	"fmt"
	"time"

	"github.com/verity-go/verity/kernel"
)

// KindTask records that an allowed call continues as a task of the
// server it was sent to (the MCP Tasks extension: the server answered
// tools/call with a task handle): a Task. The call stays open — its
// reservation charged — until its result entry (KindResult, the same
// call id) records how the task ended; a gate restarted over the log
// re-opens every call with a task entry and no result
// (toolgate.Gate.OpenTasks).
const KindTask = "toolgate.task"

// Task is the payload of a KindTask entry: the call CallID of Caller's
// session, allowed as kernel execution ExecID under rule Rule (its id:
// the rule's name, or "#" and its index), whose server made task TaskID
// for it. Owner is the key of the principal the call was made for
// (toolgate.Principal.Key, "" for none): only it may read, update or
// cancel the task. Expires, when set, is when the server said the
// task may be discarded (its createdAt plus ttlMs).
type Task struct {
	Session  string      `json:"session"`
	Caller   string      `json:"caller"`
	CallID   string      `json:"call_id"`
	ExecID   string      `json:"exec_id"`
	Tool     string      `json:"tool"`
	Rule     string      `json:"rule"`
	Reserved bool        `json:"reserved"`
	Cost     kernel.Cost `json:"cost"`
	TaskID   string      `json:"task_id"`
	Owner    string      `json:"owner,omitempty"`
	Expires  *time.Time  `json:"expires,omitempty"`
}

// decodeTask reads a Task that names its call, execution, rule and task.
func decodeTask(payload []byte) (any, error) {
	var t Task
	if err := decodeStrict(payload, &t); err != nil {
		return nil, err
	}
	switch {
	case t.Session == "" || t.Caller == "" || t.CallID == "" || t.ExecID == "" || t.Tool == "" || t.Rule == "":
		return nil, fmt.Errorf("%w: a task entry names its session, caller, call, execution, tool and rule", ErrDecode)
	case t.TaskID == "":
		return nil, fmt.Errorf("%w: /task_id: empty", ErrDecode)
	case t.Cost < 0:
		return nil, fmt.Errorf("%w: /cost: negative, %s", ErrDecode, t.Cost)
	}
	return t, nil
}
