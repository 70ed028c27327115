package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func testSealer(t require.TestingT, key []byte) *stateSealer {
	s, err := newStateSealer(key, time.Minute)
	require.NoError(t, err)
	return s
}

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func testCall(principal, caller, tool, args string) toolgate.Call {
	return toolgate.Call{Tool: tool, Arguments: []byte(args), Caller: caller, ID: "call-1",
		Principal: toolgate.Principal{Subject: principal, Issuer: "https://issuer.example"}}
}

// TestRequestStateIsBoundAndSingleUse: a sealed state opens under its
// key until it expires, binds exactly its principal, caller, tool and
// arguments, and is redeemed once.
func TestRequestStateIsBoundAndSingleUse(t *testing.T) {
	s := testSealer(t, testKey)
	c := testCall("alice", "conn:1", "delete_file", `{"path":"a"}`)
	text, err := s.seal(newSealedState(c, "ap-1", t0.Add(time.Minute)))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(text, statePrefix))
	assert.NotContains(t, text, "ap-1", "sealed: the payload is not readable")

	st, err := s.open(text, t0)
	require.NoError(t, err)
	assert.Equal(t, "ap-1", st.Approval)
	require.NoError(t, st.bindsTo(c))

	other := c
	other.Principal.Subject = "mallory"
	assert.ErrorContains(t, st.bindsTo(other), "another principal")
	for _, o := range []toolgate.Call{
		testCall("alice", "conn:2", "delete_file", `{"path":"a"}`),
		testCall("alice", "conn:1", "read_file", `{"path":"a"}`),
		testCall("alice", "conn:1", "delete_file", `{"path":"b"}`),
	} {
		assert.ErrorContains(t, st.bindsTo(o), "another call")
	}

	_, err = s.open(text, t0.Add(time.Minute))
	assert.ErrorContains(t, err, "expired")
	_, err = testSealer(t, []byte("another key, also 32 bytes long.")).open(text, t0)
	assert.ErrorContains(t, err, "not issued by this proxy")

	require.NoError(t, s.redeem(st, t0))
	assert.ErrorContains(t, s.redeem(st, t0), "used already")
}

// TestRequestStateUsedSetIsBounded: the used set forgets only expired
// states; full of live ones, it refuses the next retry (fail closed).
func TestRequestStateUsedSetIsBounded(t *testing.T) {
	s := testSealer(t, testKey)
	s.max = 3
	c := testCall("alice", "conn:1", "delete_file", `{}`)
	for i := range 3 {
		require.NoError(t, s.redeem(newSealedState(c, "ap", t0.Add(time.Duration(i+1)*time.Second)), t0))
	}
	err := s.redeem(newSealedState(c, "ap", t0.Add(time.Hour)), t0)
	assert.ErrorContains(t, err, "in flight")
	// Once one expired, it is forgotten to make room.
	require.NoError(t, s.redeem(newSealedState(c, "ap", t0.Add(time.Hour)), t0.Add(time.Second)))
	assert.Len(t, s.used, 3)
}

// TestTamperedRequestStateRefused: flipping any bit of a sealed state,
// cutting it or extending it, never opens.
func TestTamperedRequestStateRefused(t *testing.T) {
	s := testSealer(t, testKey)
	text, err := s.seal(newSealedState(testCall("alice", "c", "t", `{}`), "ap", t0.Add(time.Minute)))
	require.NoError(t, err)
	rapid.Check(t, func(rt *rapid.T) {
		b := []byte(text)
		switch rapid.IntRange(0, 2).Draw(rt, "how") {
		case 0:
			i := rapid.IntRange(0, len(b)-1).Draw(rt, "i")
			b[i] ^= byte(rapid.IntRange(1, 255).Draw(rt, "bits"))
		case 1:
			b = b[:rapid.IntRange(0, len(b)-1).Draw(rt, "len")]
		default:
			b = append(b, rapid.SliceOfN(rapid.Byte(), 1, 8).Draw(rt, "more")...)
		}
		_, err := s.open(string(b), t0)
		require.ErrorIs(rt, err, ErrRequestState)
	})
}

// TestUpstreamStateNeverMixes: an upstream's input-required result that
// uses Verity's state prefix or input key is refused; any other passes.
func TestUpstreamStateNeverMixes(t *testing.T) {
	for name, raw := range map[string]string{
		"prefix": `{"resultType":"input_required","requestState":"vg2.abc"}`,
		"legacy": `{"resultType":"input_required","requestState":"vg1.abc"}`,
		"key":    `{"resultType":"input_required","inputRequests":{"verity.approval":{"method":"elicitation/create","params":{}}}}`,
	} {
		assert.NotEmpty(t, upstreamMixes(&RawResult{JSON: json.RawMessage(raw)}), name)
	}
	assert.Empty(t, upstreamMixes(&RawResult{JSON: json.RawMessage(`{"resultType":"input_required","requestState":"up.1","inputRequests":{"name":{}}}`)}))
	assert.Empty(t, upstreamMixes(&RawResult{JSON: json.RawMessage(`{"content":[]}`)}))
	assert.NotEmpty(t, upstreamMixes(&sdk.CallToolResult{RequestState: "vg2.x"}))
}

// TestProxyResultsCarryResultType: a refusal the proxy makes says
// "complete" on the wire.
func TestProxyResultsCarryResultType(t *testing.T) {
	wire, err := json.Marshal(refusal("no"))
	require.NoError(t, err)
	assert.Contains(t, string(wire), `"resultType":"complete"`)
	assert.Contains(t, string(wire), `"isError":true`)
}

// FuzzOpenRequestState: opening any string never panics, and opens only
// the states the sealer issued, unchanged.
func FuzzOpenRequestState(f *testing.F) {
	s := testSealer(f, testKey)
	// The fuzzing workers run this setup again, sealing with other
	// nonces: what they must agree on is the states, not the texts.
	issued := map[sealedState]bool{}
	for i, c := range []toolgate.Call{testCall("alice", "c", "delete_file", `{"path":"a"}`), testCall("", "conn:x", "t", `{}`)} {
		st := newSealedState(c, "ap", t0.Add(time.Hour))
		st.ID = fmt.Sprint("fixed-", i)
		issued[st] = true
		text, err := s.seal(st)
		require.NoError(f, err)
		f.Add(text)
		f.Add(text[:len(text)-1])
		f.Add(strings.Replace(text, statePrefix, legacyStatePrefix, 1))
	}
	f.Add("vg2.")
	f.Add("vg2." + base64.RawURLEncoding.EncodeToString(make([]byte, 28)))
	f.Add("vg1.e30.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		st, err := s.open(text, t0)
		if err != nil {
			require.ErrorIs(t, err, ErrRequestState)
			require.NotContains(t, err.Error(), "\n")
			return
		}
		require.True(t, issued[st], "opened a state it did not issue: %q", text)
	})
}

// TestRequestStateSizeBounded: a state is a few hundred bytes whatever
// the principal, caller, tool and arguments, opens, and binds exactly
// them.
func TestRequestStateSizeBounded(t *testing.T) {
	s := testSealer(t, testKey)
	rapid.Check(t, func(t *rapid.T) {
		long := rapid.Custom(func(t *rapid.T) string {
			return strings.Repeat(rapid.String().Draw(t, "part"), rapid.IntRange(0, 4096).Draw(t, "times"))
		})
		c := testCall(long.Draw(t, "principal"), long.Draw(t, "caller"), long.Draw(t, "tool"), long.Draw(t, "arguments"))
		c.ID = "0190f6a8-3c1e-7b5a-9d2f-1a2b3c4d5e6f"
		text, err := s.seal(newSealedState(c, "0190f6a8-3c1e-7b5a-9d2f-000000000000", t0.Add(time.Minute)))
		require.NoError(t, err)
		require.LessOrEqual(t, len(text), 640, "a few hundred bytes whatever the call")
		st, err := s.open(text, t0)
		require.NoError(t, err)
		require.NoError(t, st.bindsTo(c))
		other := c
		switch rapid.IntRange(0, 3).Draw(t, "change") {
		case 0:
			other.Caller += "x"
		case 1:
			other.Tool += "x"
		case 2:
			other.Principal.Subject += "x"
		default:
			other.Arguments = append(other.Arguments, ' ')
		}
		require.Error(t, st.bindsTo(other), "bound to its principal, caller, tool and arguments only")
	})
}

// TestSealRefusesOversized: a state over what a retry may echo is never
// issued.
func TestSealRefusesOversized(t *testing.T) {
	s := testSealer(t, testKey)
	st := newSealedState(testCall("a", "c", "t", `{}`), "ap", t0.Add(time.Minute))
	st.CallID = strings.Repeat("1", maxStateLen)
	_, err := s.seal(st)
	assert.ErrorContains(t, err, "over the 4096 a retry may echo")
}

// TestRequestStateRedeemedAtMostOnce: a rapid state machine over the
// sealer against a naive model (every state issued, the ones redeemed):
// whatever the order of issues, retries, replays and the passing of
// time, a state is accepted exactly when it was issued, has not expired
// and was not accepted before — and, with the used set full of live
// states, refused rather than accepted twice.
func TestRequestStateRedeemedAtMostOnce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := testSealer(rt, testKey)
		s.max = rapid.IntRange(1, 6).Draw(rt, "max")
		now := t0
		type issued struct {
			text    string
			expires time.Time
		}
		var states []issued
		used := map[string]bool{}
		live := func() int {
			n := 0
			for _, st := range states {
				if used[st.text] && now.Before(st.expires) {
					n++
				}
			}
			return n
		}
		rt.Repeat(map[string]func(*rapid.T){
			"issue": func(rt *rapid.T) {
				ttl := time.Duration(rapid.IntRange(1, 60).Draw(rt, "ttl")) * time.Second
				text, err := s.seal(newSealedState(testCall("alice", "c", "t", `{}`), "ap", now.Add(ttl)))
				require.NoError(rt, err)
				states = append(states, issued{text, now.Add(ttl)})
			},
			"retry": func(rt *rapid.T) {
				if len(states) == 0 {
					rt.Skip("nothing issued")
				}
				st := states[rapid.IntRange(0, len(states)-1).Draw(rt, "state")]
				opened, err := s.open(st.text, now)
				if err == nil {
					err = s.redeem(opened, now)
				}
				switch {
				case !now.Before(st.expires):
					require.ErrorContains(rt, err, "expired")
				case used[st.text]:
					require.ErrorContains(rt, err, "used already")
				case live() >= s.max:
					require.ErrorContains(rt, err, "in flight")
				default:
					require.NoError(rt, err)
					used[st.text] = true
				}
			},
			"wait": func(rt *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(1, 30).Draw(rt, "seconds")) * time.Second)
			},
		})
	})
}
