package gatelog_test

import (
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

const (
	h1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	h2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// pinEntries are entries of the pin kinds, each good or not.
var pinEntries = []entryCase{
	{gatelog.KindPin, `{"server":"s","source":"first_use","tools":{"a":"` + h1 + `"}}`, true},
	{gatelog.KindPin, `{"server":"s","source":"lock","tools":{},"instructions":"` + h2 + `","lock":"` + h1 + `"}`, true},
	{gatelog.KindPin, `{"server":"s","source":"first_use","tools":{},"lock":"` + h1 + `"}`, false},
	{gatelog.KindPin, `{"server":"s","source":"re_pin","tools":{}}`, false},
	{gatelog.KindPin, `{"server":"s","source":"lock","tools":{"a":"sha256:00"}}`, false},
	{gatelog.KindPin, `{"server":"s","source":"lock","tools":{"":"` + h1 + `"}}`, false},
	{gatelog.KindPin, `{"server":"s","source":"lock","tools":{"a":"` + h1 + `","a":"` + h1 + `"}}`, false},
	{gatelog.KindPin, `{"server":"s","source":"lock"}`, false},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"changed","pinned":"` + h1 + `","seen":"` + h2 + `"}`, true},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"changed","pinned":"` + h1 + `","seen":"` + h1 + `"}`, false},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"new","seen":"` + h2 + `"}`, true},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"new","pinned":"` + h1 + `","seen":"` + h2 + `"}`, false},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"removed","pinned":"` + h1 + `"}`, true},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"removed","seen":"` + h1 + `"}`, false},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"restored","pinned":"` + h1 + `","seen":"` + h1 + `"}`, true},
	{gatelog.KindDrift, `{"server":"s","change":"instructions","pinned":"` + h1 + `"}`, true},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"instructions"}`, false},
	{gatelog.KindDrift, `{"server":"s","change":"changed","pinned":"` + h1 + `","seen":"` + h2 + `"}`, false},
	{gatelog.KindDrift, `{"server":"s","tool":"a","change":"moved"}`, false},
	{gatelog.KindRepin, `{"server":"s","tool":"a","old":"` + h1 + `","new":"` + h2 + `","approver":"alice","requested_by":"bob","reason":"ok"}`, true},
	{gatelog.KindRepin, `{"server":"s","tool":"a","new":"` + h2 + `","approver":"alice","reason":""}`, true},
	{gatelog.KindRepin, `{"server":"s","tool":"a","new":"` + h2 + `","approver":"bob","requested_by":"bob","reason":""}`, false},
	{gatelog.KindRepin, `{"server":"s","tool":"a","new":"` + h2 + `","approver":"","reason":""}`, false},
	{gatelog.KindRepin, `{"server":"s","tool":"a","new":"","approver":"a","reason":""}`, false},
	{gatelog.KindRepin, `{"server":"s","tool":"","new":"` + h2 + `","approver":"a","reason":""}`, false},
	{gatelog.KindRefuse, `{"session":"s","caller":"c","call_id":"1","tool":"t","reason":"r","explanation":"e","arguments_sha256":"x","arguments_size":0,"definition":"` + h1 + `"}`, true},
	{gatelog.KindRefuse, `{"session":"s","caller":"c","call_id":"1","tool":"t","reason":"r","explanation":"e","arguments_sha256":"x","arguments_size":0,"definition":"md5:1"}`, false},
	{gatelog.KindResult, `{"session":"s","caller":"c","call_id":"1","exec_id":"e","tool":"t","ok":true,"output_sha256":"x","output_size":0,"charged":"1","definition":"` + h2 + `"}`, true},
}

// TestDecodeReadsPinEntries: Decode reads the pin kinds and the
// definition of refusals and results, strictly: hashes, sources, changes
// and approvers that fit, and one line otherwise.
func TestDecodeReadsPinEntries(t *testing.T) { checkDecodes(t, pinEntries) }

// FuzzDecode: any payload of any of the gate's kinds decodes or is an
// error wrapping ErrDecode, never a panic; what decodes writes back to
// canonical JSON that decodes to the same value.
func FuzzDecode(f *testing.F) {
	for _, c := range pinEntries {
		f.Add(c.kind, []byte(c.payload))
	}
	f.Add(gatelog.KindAsk, []byte(`{}`))
	f.Fuzz(func(t *testing.T, kind string, payload []byte) { decodeRoundTrips(t, kind, payload) })
}
