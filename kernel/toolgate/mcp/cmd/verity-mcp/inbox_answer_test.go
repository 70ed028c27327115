package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
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
		`{"id":null,"decision":"approve"}`, `{"id":"x","decision":["approve"]}`,
		"\xef\xbb\xbf" + `{"id":"x","decision":"approve"}`,
		`{"id":"x","decision":"approve","reason":"\ud800"}`,
		// Members are named exactly: encoding/json would read "ID" into
		// id, and the last of "id" and "ID" would win.
		`{"id":"x","decision":"approve","ID":"y"}`, `{"Id":"x","decision":"approve","id":"y"}`,
		`{"id":"x","decision":"approve","Reason":"r"}`, `{"id":"x","decision":"approve","rea\u017fon":"r"}`,
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
		if strings.ContainsFunc(a.Reason, hiddenInReason) {
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

// TestDecodeAnswerNamesEveryProblem: a refusal lists every problem once,
// at the JSON Pointer of its member, with its rule, in the message the
// inbox page shows; a body that is not strict JSON is one syntax problem.
func TestDecodeAnswerNamesEveryProblem(t *testing.T) {
	for body, want := range map[string][]string{
		`{"id":"a b","decision":"maybe","reason":"x\u202ey"}`: {
			`/decision: enum: is "approve" or "deny"`,
			"/id: character: a character outside printable ASCII, or a space",
			"/reason: character: a control, format, line or paragraph separator character"},
		`{"id":"","reason":"` + strings.Repeat("r", 1001) + `"}`: {
			"/decision: required: missing", "/id: length: 0 bytes, want 1 to 128", "/reason: length: 1001 bytes, at most 1000"},
		`{"id":7,"decision":null,"approver":"root"}`: {
			"/approver: unknown_field: unknown member", "/decision: type: want a string, got null", "/id: type: want a string, got a number"},
		`[{"id":"x","decision":"approve"}]`:                        {"type: want an object, got an array"},
		`{"id":"x","decision":"approve","decision":"deny"}`:        {`duplicate_key: `},
		`{"id":"x","decision":"approve"} {}`:                       {"syntax: "},
		"{\"id\":\"x\",\"decision\":\"deny\",\"reason\":\"\xff\"}": {"syntax: "},
	} {
		_, err := decodeAnswer([]byte(body))
		require.ErrorIs(t, err, errAnswer, body)
		var ve *violation.ValidationError
		require.True(t, errors.As(err, &ve), body)
		require.Len(t, ve.Violations, len(want), "%s: %v", body, ve.Violations)
		for i, v := range ve.Violations {
			assert.True(t, strings.HasPrefix(v.String(), want[i]), "%s: %q, want %q", body, v, want[i])
			assert.Contains(t, err.Error(), v.String(), "the message shows every problem")
		}
		assert.True(t, strings.HasPrefix(err.Error(), "invalid answer: "), err.Error())
	}
}

// FuzzDecodeAnswerAgrees holds decodeAnswer to the decoder it replaced
// (oldDecodeAnswer): both accept the same bodies as the same answer, but
// for one difference, on purpose: the old one read members with
// encoding/json, which matches names case-insensitively (with Unicode
// folding: "ID", "Reason", "rea\u017fon"), so that of "id" and "ID" the
// last one won; the strict reader refuses such a member as unknown.
func FuzzDecodeAnswerAgrees(f *testing.F) {
	for _, s := range []string{
		`{"id":"019a-1","decision":"approve","reason":"ok"}`,
		` {"decision":"deny","id":"x","reason":""} `,
		`{"id":"x","decision":"approve","ID":"y"}`,
		`{"id":"x","DECISION":"deny","decision":"approve"}`,
		`{"id":"x","decision":"approve","rea\u017fon":"r"}`,
		`{"id":"x","decision":"approve","reason":null}`,
		`{"id":"x\u0041","decision":"appro\u0076e","reason":"\ud83d\ude00"}`,
		`{"id":"x","decision":"approve","reason":"\u2028"}`,
		`{"id":"x","decision":"deny"}` + "\n",
		"\xef\xbb\xbf{\"id\":\"x\",\"decision\":\"deny\"}",
		`{"id":1e2,"decision":"deny"}`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAnswer(b)
		o, oerr := oldDecodeAnswer(b)
		switch {
		case err == nil && oerr == nil:
			if a != o {
				t.Fatalf("%q reads as %+v, was %+v", b, a, o)
			}
		case err == nil:
			t.Fatalf("%q accepted as %+v, was refused: %v", b, a, oerr)
		case oerr == nil:
			var se *strictjson.Error
			if !errors.As(strictjson.Unmarshal(b, &inboxAnswer{}), &se) {
				t.Fatalf("%q refused without a strict reader's problem: %v", b, err)
			}
			for _, v := range se.Violations() {
				name, _ := strings.CutPrefix(v.Path, "/")
				if v.Rule != violation.RuleUnknownField || !foldsToAMember(name) {
					t.Fatalf("%q refused (%v), was accepted as %+v", b, err, o)
				}
			}
			if _, err := canon.Decode(b); err != nil {
				t.Fatalf("%q is not strict JSON but was accepted: %v", b, err)
			}
		}
	})
}

// foldsToAMember reports whether name is a member's name only under
// case folding.
func foldsToAMember(name string) bool {
	for _, m := range []string{"id", "decision", "reason"} {
		if name != m && strings.EqualFold(name, m) {
			return true
		}
	}
	return false
}

// BenchmarkDecodeAnswer reads a typical answer with the strict reader
// (new) and with the decoder it replaced (old), which read it three
// times.
func BenchmarkDecodeAnswer(b *testing.B) {
	body := []byte(`{"id":"019a3b2c-7d4e-7f00-8a1b-2c3d4e5f6a7b","decision":"deny","reason":"not this one: the path is outside the project"}`)
	for name, decode := range map[string]func([]byte) (inboxAnswer, error){"new": decodeAnswer, "old": oldDecodeAnswer} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
