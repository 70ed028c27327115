package mcp

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
)

// The request state's guarantees: a state the Guard issued decodes to
// what it encoded (TestRequestStateRoundTrips), any change to it is
// refused (TestRequestStateTamperRefused), no input makes the decoder
// panic or accept a state not signed with the key (FuzzDecodeState), the
// state of any call fits the size a retry may echo, and binds that call
// only (TestRequestStateSizeBounded), and a state that would not fit is
// never issued (TestEncodeStateRefusesOversized).

var testKey = []byte("0123456789abcdef0123456789abcdef")

func drawState(t *rapid.T) approvalState {
	s := rapid.StringN(1, 40, -1)
	return approvalState{Caller: s.Draw(t, "caller"), CallID: s.Draw(t, "call"),
		Approval: s.Draw(t, "approval"), Tool: s.Draw(t, "tool"), Digest: s.Draw(t, "digest")}
}

func TestRequestStateRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := drawState(t)
		text, err := encodeState(testKey, want)
		require.NoError(t, err)
		got, err := decodeState(testKey, text)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
}

func TestRequestStateTamperRefused(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := drawState(t)
		text, err := encodeState(testKey, st)
		require.NoError(t, err)

		// Any single changed byte, or another key, is refused.
		i := rapid.IntRange(0, len(text)-1).Draw(t, "at")
		b := []byte(text)
		b[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "flip"))
		_, err = decodeState(testKey, string(b))
		assert.ErrorIs(t, err, ErrRequestState)

		other := []byte(strings.Repeat("k", 32))
		_, err = decodeState(other, text)
		assert.ErrorIs(t, err, ErrRequestState)
	})
}

func FuzzDecodeState(f *testing.F) {
	good, err := encodeState(testKey, approvalState{Caller: "c", CallID: "1", Approval: "a", Tool: "delete_file", Digest: "d"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{good, "", "vg1", "vg1.", "vg1..", "vg1.e30.AAAA", "vg2." + good[4:], good + "=", strings.Repeat("A", maxStateLen+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := decodeState(testKey, s)
		if err != nil {
			if !assert.ErrorIs(t, err, ErrRequestState) {
				t.FailNow()
			}
			return
		}
		// Accepted: it must be a state this key signed, which encodes back
		// to the same text.
		again, err := encodeState(testKey, st)
		require.NoError(t, err)
		_, err = decodeState(testKey, again)
		require.NoError(t, err)
		if s != again {
			// JSON may spell one state several ways; the MAC covers the
			// spelling, so only a signed spelling is accepted — the
			// fuzzer cannot forge one.
			t.Fatalf("accepted a state the key did not sign: %q", s)
		}
	})
}

func TestRequestStateSizeBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Strings of any length, up to some 64 KB.
		long := rapid.Custom(func(t *rapid.T) string {
			return strings.Repeat(rapid.String().Draw(t, "part"), rapid.IntRange(0, 4096).Draw(t, "times"))
		})
		c := toolgate.Call{ID: uuid.NewString(), Caller: long.Draw(t, "caller"), Tool: long.Draw(t, "tool"),
			Arguments: []byte(long.Draw(t, "arguments"))}
		text, err := encodeState(testKey, newApprovalState(c, uuid.NewString()))
		require.NoError(t, err)
		require.LessOrEqual(t, len(text), 512, "a few hundred bytes whatever the call")
		st, err := decodeState(testKey, text)
		require.NoError(t, err)
		require.True(t, st.binds(c))

		other := c
		switch rapid.IntRange(0, 2).Draw(t, "change") {
		case 0:
			other.Caller += "x"
		case 1:
			other.Tool += "x"
		default:
			other.Arguments = append(other.Arguments, ' ')
		}
		require.False(t, st.binds(other), "bound to its caller, tool and arguments only")
	})
}

func TestEncodeStateRefusesOversized(t *testing.T) {
	st := approvalState{Caller: "c", CallID: strings.Repeat("1", maxStateLen), Approval: "a", Tool: "t", Digest: "d"}
	_, err := encodeState(testKey, st)
	assert.ErrorContains(t, err, "over the 4096 a retry may echo")
}
