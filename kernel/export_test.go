package kernel

import (
	"fmt"

	"github.com/verity-go/verity/trace"
)

// The budget's transitions are the kernel's own (Commit charges, Rollback
// refunds); the tests of their rules reach them through these.

func NewBudget(limit Cost) (Budget, error) {
	if limit < 0 {
		return Budget{}, fmt.Errorf("%w: negative budget %s", ErrInvalidCost, limit)
	}
	return Budget{limit: limit}, nil
}

func (b Budget) Charge(id string, c Cost) (Budget, error) { return b.charge(id, c) }
func (b Budget) Refund(id string, c Cost) (Budget, error) { return b.refund(id, c) }
func (b Budget) CanAfford(c Cost) bool                    { return b.canAfford(c) }

// ValidateAction reports every way a is malformed (the well_formed
// check).
func ValidateAction(a Action) error { return a.validate() }

// EntryPayload is the payload a Session writes for e.
func EntryPayload(e Entry) []byte { return payload(e) }

// OldDecodeEntry is the entry decoder DecodeEntry replaced (see
// entry_old_test.go).
func OldDecodeEntry(e trace.Entry) (Entry, error) { return oldDecodeEntry(e) }

// The readers value.Decode, DecodeState and DecodeAction replaced (see
// json_old_test.go).
var (
	OldDecodeValue  = oldDecodeValue
	OldDecodeState  = oldDecodeState
	OldDecodeAction = oldDecodeAction
)
