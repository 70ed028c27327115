package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeAnswer(t *testing.T) {
	a, err := decodeAnswer([]byte(`{"id":"019a-1","decision":"deny","reason":"not <b>this</b> one"}`))
	require.NoError(t, err)
	assert.Equal(t, inboxAnswer{ID: "019a-1", Decision: "deny", Reason: "not <b>this</b> one"}, a)
	a, err = decodeAnswer([]byte(` {"decision":"approve","id":"x"} `))
	require.NoError(t, err)
	assert.Equal(t, inboxAnswer{ID: "x", Decision: "approve"}, a)

	for _, bad := range []string{
		``, `null`, `[]`, `"approve"`, `{}`,
		`{"id":"x"}`, `{"decision":"approve"}`,
		`{"id":"x","decision":"APPROVE"}`, `{"id":"x","decision":"maybe"}`,
		`{"id":"x","decision":"approve","approver":"root"}`,
		`{"id":"x","decision":"approve","decision":"deny"}`,
		`{"id":"x","decision":"approve","reason":7}`, `{"id":7,"decision":"approve"}`,
		`{"id":"","decision":"approve"}`, `{"id":"a b","decision":"approve"}`,
		`{"id":"` + strings.Repeat("x", 129) + `","decision":"approve"}`,
		`{"id":"x","decision":"approve","reason":"` + strings.Repeat("r", 1001) + `"}`,
		`{"id":"x","decision":"approve","reason":"line\nbreak"}`,
		`{"id":"x","decision":"approve","reason":"hidden\u202etxt"}`,
		"{\"id\":\"x\",\"decision\":\"approve\",\"reason\":\"\xff\"}",
		`{"id":"x","decision":"approve"} {}`,
		`{"id":"x","decision":"approve","reason":null}`,
	} {
		_, err := decodeAnswer([]byte(bad))
		assert.ErrorIs(t, err, errAnswer, "%q", bad)
	}
}

// FuzzDecodeAnswer: any body is refused with errAnswer or accepted as an
// answer within its bounds, which reads back the same when written again.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id":"019a-1","decision":"approve","reason":"ok"}`,
		`{"id":"x","decision":"deny"}`,
		`{"id":"x","decision":"approve","decision":"deny"}`,
		`{"id":"x","decision":"approve","reason":"\u202e"}`,
		`{"id":"x","decision":"approve","reason":"<script>alert(1)</script>"}`,
		`[{"id":"x"}]`,
		"{\"id\":\"\xff\",\"decision\":\"deny\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAnswer(b)
		if err != nil {
			if !assert.ErrorIs(t, err, errAnswer) {
				t.FailNow()
			}
			return
		}
		if a.Decision != decisionApprove && a.Decision != decisionDeny {
			t.Fatalf("decision %q accepted", a.Decision)
		}
		if a.ID == "" || len(a.ID) > maxAnswerID || len(a.Reason) > maxAnswerReason || !utf8.ValidString(a.Reason) {
			t.Fatalf("out of bounds: %+v", a)
		}
		if strings.ContainsFunc(a.Reason, func(r rune) bool { return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) }) {
			t.Fatalf("a hidden character accepted: %q", a.Reason)
		}
		again, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeAnswer(again)
		if err != nil || back != a {
			t.Fatalf("%+v written as %s reads back as %+v, %v", a, again, back, err)
		}
	})
}
