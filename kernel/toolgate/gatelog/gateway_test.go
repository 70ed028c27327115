package gatelog_test

import (
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// gatewayEntries are entries of the gateway's kinds, each good or not.
var gatewayEntries = []entryCase{
	{gatelog.KindSpawn, `{"server":"files","command":"mcp-files","arguments_sha256":"` + hex64 + `","pid":42,"protocol":"2025-11-25"}`, true},
	{gatelog.KindSpawn, `{"server":"files","command":"mcp-files","arguments_sha256":"` + hex64 + `","pid":0,"protocol":""}`, false},
	{gatelog.KindSpawn, `{"server":"","command":"mcp-files","arguments_sha256":"` + hex64 + `","pid":1,"protocol":""}`, false},
	{gatelog.KindSpawn, `{"server":"f","command":"c","arguments_sha256":"ABC","pid":1,"protocol":""}`, false},
	{gatelog.KindSpawn, `{"server":"f","command":"c","arguments_sha256":"` + hex64 + `","pid":1}`, false},
	{gatelog.KindSpawn, `{"server":"f","command":"c","arguments_sha256":"` + hex64 + `","pid":1,"protocol":"","args":[]}`, false},
	{gatelog.KindConnect, `{"server":"forge","url":"https://forge.example/mcp","protocol":"2026-07-28","tls_subject":"CN=forge","tls_sha256":"` + hex64 + `"}`, true},
	{gatelog.KindConnect, `{"server":"forge","url":"http://127.0.0.1:9/mcp","protocol":"2026-07-28"}`, true},
	{gatelog.KindConnect, `{"server":"forge","url":"","protocol":"2026-07-28"}`, false},
	{gatelog.KindConnect, `{"server":"forge","url":"u","protocol":"p","tls_sha256":"sha256:` + hex64 + `"}`, false},
	{gatelog.KindReload, `{"gateway_sha256":"` + hex64 + `","policy_sha256":"` + hex64 + `","added":["mail"],"removed":["notes"]}`, true},
	{gatelog.KindReload, `{"gateway_sha256":"` + hex64 + `","policy_sha256":"` + hex64 + `"}`, true},
	{gatelog.KindReload, `{"gateway_sha256":"` + hex64 + `","policy_sha256":""}`, false},
	{gatelog.KindReload, `{"gateway_sha256":"` + hex64 + `","policy_sha256":"` + hex64 + `","added":null}`, false},
}

// TestDecodeReadsGatewayEntries: Decode reads the spawn, connect and
// reload entries strictly, one line for what it refuses, and what it
// reads writes back as it was.
func TestDecodeReadsGatewayEntries(t *testing.T) { checkDecodes(t, gatewayEntries) }

// FuzzDecodeGateway: any payload of the gateway's kinds decodes or is an
// error wrapping ErrDecode, never a panic; what decodes writes back to
// canonical JSON that decodes to the same value.
func FuzzDecodeGateway(f *testing.F) {
	for _, c := range gatewayEntries {
		f.Add(c.kind, []byte(c.payload))
	}
	f.Fuzz(func(t *testing.T, kind string, payload []byte) { decodeRoundTrips(t, kind, payload) })
}
