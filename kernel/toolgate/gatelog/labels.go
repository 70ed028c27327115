package gatelog

import (
	"fmt"
	"time"
)

// KindSharedLabels records flow labels a gate read from the store it
// shares with other gates (toolgate.WithSharedLabels: several replicas
// of one deployment) and that its own session of the caller did not
// carry: a SharedLabels, appended before the decision that relied on
// them. A gate restarted over its log carries them again from it, so
// that the decisions of one replica replay from its own log alone.
const KindSharedLabels = "toolgate.shared_labels"

// SharedLabels is the payload of a KindSharedLabels entry: Caller's
// session carries Labels from now on, in Conversation when one is named
// (toolgate.Policy.ConversationLabels), else caller-wide.
type SharedLabels struct {
	Session      string        `json:"session"`
	Caller       string        `json:"caller"`
	Conversation string        `json:"conversation,omitempty"`
	Labels       []SharedLabel `json:"labels"`
}

// SharedLabel is one flow label as a shared store holds it: carried
// until Until (exclusive), or for good when Until is zero.
type SharedLabel struct {
	Label string    `json:"label"`
	Until time.Time `json:"until,omitzero"`
}

// decodeSharedLabels reads a SharedLabels that names at least one label,
// none empty and none twice.
func decodeSharedLabels(payload []byte) (any, error) {
	var x SharedLabels
	if err := decodeStrict(payload, &x); err != nil {
		return nil, err
	}
	if len(x.Labels) == 0 {
		return nil, fmt.Errorf("%w: /labels: a shared-labels entry names at least one label", ErrDecode)
	}
	seen := make(map[string]bool, len(x.Labels))
	for i, l := range x.Labels {
		switch {
		case l.Label == "":
			return nil, fmt.Errorf("%w: /labels/%d/label: empty", ErrDecode, i)
		case seen[l.Label]:
			return nil, fmt.Errorf("%w: /labels/%d/label: %q named twice", ErrDecode, i, l.Label)
		}
		seen[l.Label] = true
	}
	return x, nil
}
