package gatelog_test

import (
	"strings"
	"testing"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// gatewayEntries are entries of the gateway's kinds, each good or not.
var gatewayEntries = []struct {
	kind, payload string
	ok            bool
}{
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
func TestDecodeReadsGatewayEntries(t *testing.T) {
	for i, c := range gatewayEntries {
		v, err := gatelog.Decode(trace.Entry{Kind: c.kind, Payload: []byte(c.payload)})
		if (err == nil) != c.ok {
			t.Errorf("%d %s %s: error %v, want ok=%v", i, c.kind, c.payload, err, c.ok)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("%d: a two-line error %q", i, err)
			}
			continue
		}
		b, err := canon.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := canon.Transform([]byte(c.payload))
		if string(b) != string(want) {
			t.Errorf("%d: decoded and written again: %s, want %s", i, b, want)
		}
	}
}

// FuzzDecodeGateway: any payload of the gateway's kinds decodes or is an
// error wrapping ErrDecode, never a panic; what decodes writes back to
// canonical JSON that decodes to the same value.
func FuzzDecodeGateway(f *testing.F) {
	for _, c := range gatewayEntries {
		f.Add(c.kind, []byte(c.payload))
	}
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		v, err := gatelog.Decode(trace.Entry{Kind: kind, Payload: payload})
		if err != nil {
			return
		}
		b, err := canon.Marshal(v)
		if err != nil {
			t.Fatalf("decoded %T, cannot write it: %v", v, err)
		}
		again, err := gatelog.Decode(trace.Entry{Kind: kind, Payload: b})
		if err != nil {
			t.Fatalf("written back %s, refused: %v", b, err)
		}
		b2, _ := canon.Marshal(again)
		if string(b2) != string(b) {
			t.Fatalf("not stable: %s then %s", b, b2)
		}
	})
}
