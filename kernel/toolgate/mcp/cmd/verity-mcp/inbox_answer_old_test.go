package main

// The answer decoder as it was before it read with internal/strictjson:
// canon.DecodeInto into the struct with encoding/json's rules, canon.Decode
// into a generic tree, and a hand-written walk of the tree.
// FuzzDecodeAnswerAgrees holds the new reader to it.

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
)

func oldDecodeAnswer(b []byte) (inboxAnswer, error) {
	var a inboxAnswer
	if err := canon.DecodeInto(b, &a, true); err != nil {
		return inboxAnswer{}, fmt.Errorf("%w: %v", errAnswer, err)
	}
	tree, err := canon.Decode(b)
	if err != nil {
		return inboxAnswer{}, fmt.Errorf("%w: %v", errAnswer, err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return inboxAnswer{}, fmt.Errorf("%w: not a JSON object", errAnswer)
	}
	for _, k := range []string{"id", "decision"} {
		if _, ok := m[k]; !ok {
			return inboxAnswer{}, fmt.Errorf("%w: no %q", errAnswer, k)
		}
	}
	for k, v := range m {
		if _, ok := v.(string); !ok {
			return inboxAnswer{}, fmt.Errorf("%w: %q is not a string", errAnswer, k)
		}
	}
	switch {
	case a.ID == "" || len(a.ID) > maxAnswerID:
		return inboxAnswer{}, fmt.Errorf("%w: id of %d bytes, 1 to %d", errAnswer, len(a.ID), maxAnswerID)
	case strings.ContainsFunc(a.ID, func(r rune) bool { return r <= ' ' || r >= 0x7f }):
		return inboxAnswer{}, fmt.Errorf("%w: id with a character outside printable ASCII", errAnswer)
	case a.Decision != decisionApprove && a.Decision != decisionDeny:
		return inboxAnswer{}, fmt.Errorf("%w: decision is %q or %q", errAnswer, decisionApprove, decisionDeny)
	case len(a.Reason) > maxAnswerReason:
		return inboxAnswer{}, fmt.Errorf("%w: reason of %d bytes, at most %d", errAnswer, len(a.Reason), maxAnswerReason)
	case !utf8.ValidString(a.Reason):
		return inboxAnswer{}, fmt.Errorf("%w: reason is not UTF-8", errAnswer)
	case strings.ContainsFunc(a.Reason, func(r rune) bool { return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) }):
		return inboxAnswer{}, fmt.Errorf("%w: reason with a control or format character", errAnswer)
	}
	return a, nil
}
