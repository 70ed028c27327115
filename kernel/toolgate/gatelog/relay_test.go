package gatelog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// relayEntries are KindRelay payloads, each good or not.
var relayEntries = []struct {
	payload string
	ok      bool
}{
	{`{"method":"elicitation/create","caller":"stdio","action":"relayed","origin":"https://login.example.com"}`, true},
	{`{"method":"elicitation/create","caller":"stdio","action":"refused","origin":"https://evil.example","reason":"not on the allow-list"}`, true},
	{`{"method":"elicitation/create","caller":"","action":"refused","reason":"only https URLs are relayed"}`, true},
	{`{"method":"sampling/createMessage","caller":"stdio","action":"relayed"}`, true},
	{`{"method":"sampling/createMessage","caller":"stdio","action":"dropped","tools":["delete"],"reason":"tools the caller may not call"}`, true},
	{`{"method":"sampling/createMessage","caller":"stdio","action":"refused","tools":["delete"],"reason":"x"}`, true},
	{`{"method":"roots/list","caller":"stdio","action":"relayed"}`, false},
	{`{"method":"elicitation/create","caller":"stdio","action":"allowed"}`, false},
	{`{"method":"elicitation/create","caller":"stdio","action":"refused"}`, false},
	{`{"method":"elicitation/create","caller":"stdio","action":"dropped","tools":["x"],"reason":"r"}`, false},
	{`{"method":"sampling/createMessage","caller":"stdio","action":"relayed","origin":"https://x"}`, false},
	{`{"method":"sampling/createMessage","caller":"stdio","action":"dropped","reason":"r"}`, false},
	{`{"method":"sampling/createMessage","action":"relayed"}`, false},
	{`{"method":"sampling/createMessage","caller":"stdio","action":"relayed","extra":1}`, false},
	{`{"method":"sampling/createMessage","caller":"stdio","action":"relayed","tools":null}`, false},
}

// TestRelayDecodedStrictly: a relay entry decodes when its members
// agree (a known method and action, a reason for a refusal or a drop,
// the tools of a drop, no origin on sampling), and is refused otherwise.
func TestRelayDecodedStrictly(t *testing.T) {
	for _, c := range relayEntries {
		v, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindRelay, Payload: []byte(c.payload)})
		if !c.ok {
			assert.ErrorIs(t, err, gatelog.ErrDecode, c.payload)
			continue
		}
		if assert.NoError(t, err, c.payload) {
			assert.IsType(t, gatelog.Relay{}, v)
		}
	}
}

// FuzzDecodeRelay: any relay payload is read without a panic, and one
// read writes back to one read alike.
func FuzzDecodeRelay(f *testing.F) {
	for _, c := range relayEntries {
		f.Add([]byte(c.payload))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { decodeRoundTrips(t, gatelog.KindRelay, payload) })
}
