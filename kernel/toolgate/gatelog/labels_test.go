package gatelog_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

func TestDecodeSharedLabels(t *testing.T) {
	until := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)
	want := gatelog.SharedLabels{Session: "toolgate:a", Caller: "a", Conversation: "c",
		Labels: []gatelog.SharedLabel{{Label: "secret"}, {Label: "untrusted", Until: until}}}
	b, err := json.Marshal(want)
	require.NoError(t, err)
	assert.JSONEq(t, `{"session":"toolgate:a","caller":"a","conversation":"c","labels":[{"label":"secret"},{"label":"untrusted","until":"2026-03-01T12:01:00Z"}]}`, string(b))
	got, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindSharedLabels, Payload: b})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	for name, payload := range map[string]string{
		"NoLabels":     `{"session":"s","caller":"a","labels":[]}`,
		"EmptyLabel":   `{"session":"s","caller":"a","labels":[{"label":""}]}`,
		"LabelTwice":   `{"session":"s","caller":"a","labels":[{"label":"x"},{"label":"x","until":"2026-03-01T12:01:00Z"}]}`,
		"Unknown":      `{"session":"s","caller":"a","labels":[{"label":"x","ttl":"1m"}]}`,
		"NoCaller":     `{"session":"s","labels":[{"label":"x"}]}`,
		"NotAnObject":  `[]`,
		"BadTime":      `{"session":"s","caller":"a","labels":[{"label":"x","until":"tomorrow"}]}`,
		"TrailingJunk": `{"session":"s","caller":"a","labels":[{"label":"x"}]} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindSharedLabels, Payload: []byte(payload)})
			require.Error(t, err)
			assert.True(t, errors.Is(err, gatelog.ErrDecode), "%v", err)
		})
	}
}

// FuzzDecodeSharedLabels: any payload decodes or is an error wrapping
// ErrDecode, never a panic; what decodes names at least one label, each
// once and none empty, and writes back to JSON that decodes to the same.
func FuzzDecodeSharedLabels(f *testing.F) {
	f.Add([]byte(`{"session":"toolgate:a","caller":"a","labels":[{"label":"x"},{"label":"y","until":"2026-03-01T12:01:00+01:00"}]}`))
	f.Add([]byte(`{"session":"toolgate:a","caller":"a","conversation":"c","labels":[{"label":"x"}]}`))
	f.Add([]byte(`{"session":"s","caller":"a","labels":[{"label":"x"},{"label":"x"}]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		v, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindSharedLabels, Payload: payload})
		if err != nil {
			if !errors.Is(err, gatelog.ErrDecode) {
				t.Fatalf("error %v does not wrap ErrDecode", err)
			}
			return
		}
		x := v.(gatelog.SharedLabels)
		seen := map[string]bool{}
		for _, l := range x.Labels {
			if l.Label == "" || seen[l.Label] {
				t.Fatalf("accepted labels %v", x.Labels)
			}
			seen[l.Label] = true
		}
		if len(seen) == 0 {
			t.Fatal("accepted no label")
		}
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		again, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindSharedLabels, Payload: b})
		if err != nil {
			t.Fatalf("written back %s, refused: %v", b, err)
		}
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
			t.Fatalf("not stable: %s then %s", b, b2)
		}
	})
}
