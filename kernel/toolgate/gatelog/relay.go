package gatelog

import (
	"fmt"
	"slices"
)

// KindRelay records what a proxy did with a request its upstream MCP
// server sent its client — a URL-mode elicitation, or a sampling
// request that offers the model tools — before relaying it to a
// client: a Relay.
const KindRelay = "toolgate.relay"

// The Relay actions.
const (
	// RelayRelayed: the request went to the client as the upstream
	// wrote it.
	RelayRelayed = "relayed"
	// RelayDropped: a sampling request went to the client without the
	// tools (Relay.Tools) the caller may not call.
	RelayDropped = "dropped"
	// RelayRefused: the request was refused; the upstream got an error
	// and the client never saw it.
	RelayRefused = "refused"
)

// Relay is the payload of a KindRelay entry. Method is the upstream's
// request ("elicitation/create" or "sampling/createMessage"); Caller
// the key of the client it was meant for (empty when no client was
// connected); Action one of the Relay* actions. A URL-mode elicitation
// names its URL's Origin (scheme, host and port, as the allow-list is
// written; empty when the URL has none that can be read); a sampling
// request the Tools that were dropped or that refused it. Reason says,
// in one line, why it was refused or tools were dropped.
type Relay struct {
	Method string   `json:"method"`
	Caller string   `json:"caller"`
	Action string   `json:"action"`
	Origin string   `json:"origin,omitempty"`
	Tools  []string `json:"tools,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// The methods a Relay entry names: Relay.Method.
const (
	methodElicit   = "elicitation/create"
	methodSampling = "sampling/createMessage"
)

// decodeRelay reads a KindRelay payload and checks that its members
// agree: a known method and action, a reason for every refusal and
// drop, tools only on a sampling request (and always on a drop), no
// origin on one.
func decodeRelay(payload []byte) (any, error) {
	v, err := decodeAs[Relay](payload)
	if err != nil {
		return nil, err
	}
	r := v.(Relay)
	switch {
	case r.Method != methodElicit && r.Method != methodSampling:
		return nil, fmt.Errorf("%w: /method: %q is not %s or %s", ErrDecode, r.Method, methodElicit, methodSampling)
	case !slices.Contains([]string{RelayRelayed, RelayDropped, RelayRefused}, r.Action):
		return nil, fmt.Errorf("%w: /action: %q is not relayed, dropped or refused", ErrDecode, r.Action)
	case r.Action != RelayRelayed && r.Reason == "":
		return nil, fmt.Errorf("%w: /reason: a %s request names why", ErrDecode, r.Action)
	case r.Method == methodElicit && (len(r.Tools) > 0 || r.Action == RelayDropped):
		return nil, fmt.Errorf("%w: an elicitation has no tools to drop", ErrDecode)
	case r.Method == methodSampling && r.Origin != "":
		return nil, fmt.Errorf("%w: /origin: a sampling request has no URL", ErrDecode)
	case r.Action == RelayDropped && len(r.Tools) == 0:
		return nil, fmt.Errorf("%w: /tools: a drop names the tools dropped", ErrDecode)
	}
	return r, nil
}
