package gatelog_test

import (
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

const tid = "4bf92f3577b34da6a3ce929d0e0e4736"

// protocolEntries are protocol entries, and refusals and results with a
// trace, each good or not.
var protocolEntries = []entryCase{
	{gatelog.KindProtocol, `{"caller":"c","method":"tools/call","name":"t","reason":"header_mismatch","header":"Mcp-Name","code":-32020,"explanation":"e","trace":"` + tid + `"}`, true},
	{gatelog.KindProtocol, `{"caller":"","method":"tools/call","reason":"missing_version","code":-32602,"explanation":"e"}`, true},
	{gatelog.KindProtocol, `{"caller":"c","method":"tools/call","reason":"header_mismatch","code":-32020,"explanation":"e"}`, false},                     // no header
	{gatelog.KindProtocol, `{"caller":"c","method":"tools/call","reason":"header_mismatch","header":"Mcp-Name","code":-32602,"explanation":"e"}`, false}, // wrong code
	{gatelog.KindProtocol, `{"caller":"c","method":"tools/call","reason":"missing_version","header":"Mcp-Name","code":-32602,"explanation":"e"}`, false},
	{gatelog.KindProtocol, `{"caller":"c","method":"tools/call","reason":"because","code":-32020,"explanation":"e"}`, false},
	{gatelog.KindProtocol, `{"caller":"c","method":"","reason":"missing_version","code":-32602,"explanation":"e"}`, false},
	{gatelog.KindProtocol, `{"caller":"c","method":"m","reason":"missing_version","code":-32602,"explanation":""}`, false},
	{gatelog.KindProtocol, `{"caller":"c","method":"m","reason":"missing_version","code":-32602,"explanation":"e","trace":"00000000000000000000000000000000"}`, false},
	{gatelog.KindProtocol, `{"caller":"c","method":"m","reason":"missing_version","code":-32602,"explanation":"e","trace":"4BF92F3577B34DA6A3CE929D0E0E4736"}`, false},
	{gatelog.KindProtocol, `{"caller":"c","method":"m","reason":"missing_version","code":-32602,"explanation":"e","extra":1}`, false},
	{gatelog.KindRefuse, `{"session":"s","caller":"c","call_id":"1","tool":"t","reason":"r","explanation":"e","arguments_sha256":"x","arguments_size":0,"trace":"` + tid + `"}`, true},
	{gatelog.KindRefuse, `{"session":"s","caller":"c","call_id":"1","tool":"t","reason":"r","explanation":"e","arguments_sha256":"x","arguments_size":0,"trace":"xyz"}`, false},
	{gatelog.KindResult, `{"session":"s","caller":"c","call_id":"1","exec_id":"e","tool":"t","ok":true,"output_sha256":"x","output_size":0,"charged":"1","trace":"` + tid + `"}`, true},
	{gatelog.KindResult, `{"session":"s","caller":"c","call_id":"1","exec_id":"e","tool":"t","ok":true,"output_sha256":"x","output_size":0,"charged":"1","trace":"` + tid + `0"}`, false},
}

// TestDecodeReadsProtocolEntries: Decode reads protocol entries whose
// reason, header and code agree, and a refusal's or result's trace only
// when it is a W3C trace id; what it reads writes back canonical.
func TestDecodeReadsProtocolEntries(t *testing.T) { checkDecodes(t, protocolEntries) }

// FuzzDecodeProtocol: FuzzDecode's property, seeded with protocol
// entries.
func FuzzDecodeProtocol(f *testing.F) {
	for _, c := range protocolEntries {
		f.Add(c.kind, []byte(c.payload))
	}
	f.Fuzz(func(t *testing.T, kind string, payload []byte) { decodeRoundTrips(t, kind, payload) })
}
