package mcp_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// annotated are the x-mcp-header annotations of the tests' tool "deploy"
// (a schema with a nested one, as the upstream lists it).
var annotatedSchema = []byte(`{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}},
	"note":{"type":"string"}}}`)

func params(tool string) []gatemcp.ParamHeader {
	if tool == "deploy" {
		return gatemcp.ParamHeadersOf(annotatedSchema)
	}
	return nil
}

// body is a tools/call of protocol 2026-07-28 (its _meta version set
// unless version is "").
func body(tool string, args map[string]any, version string) []byte {
	p := map[string]any{"name": tool, "arguments": args}
	if version != "" {
		p["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": version}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": p})
	return b
}

// modern is the headers a 2026-07-28 client sends with a call of tool.
func modern(tool string) http.Header {
	h := http.Header{}
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", tool)
	return h
}

func check(t *testing.T, h http.Header, b []byte) *gatemcp.ProtocolError {
	r, ok := gatemcp.ParseRequest(b)
	require.True(t, ok, "%s", b)
	return gatemcp.CheckHeaders(h, r, params)
}

// TestHeaderChecks: each rule of CheckHeaders, with the header it names
// and its code.
func TestHeaderChecks(t *testing.T) {
	args := map[string]any{"region": "eu-west", "count": 3, "opts": map[string]any{"dry": true}}
	full := func() http.Header {
		h := modern("deploy")
		h.Set("Mcp-Param-Region", "eu-west")
		h.Set("Mcp-Param-Count", "3")
		h.Set("Mcp-Param-Dry-Run", "true")
		return h
	}
	require.Nil(t, check(t, full(), body("deploy", args, "2026-07-28")), "headers that repeat the body pass")
	b64 := full()
	b64.Set("Mcp-Param-Region", "=?base64?"+base64.StdEncoding.EncodeToString([]byte("eu-west"))+"?=")
	require.Nil(t, check(t, b64, body("deploy", args, "2026-07-28")), "the base64 form")

	legacy := http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}
	require.Nil(t, check(t, legacy, body("deploy", args, "")), "a 2025 request needs none of them")

	for _, c := range []struct {
		name   string
		edit   func(http.Header)
		body   []byte
		header string
		code   int64
	}{
		{"method differs", func(h http.Header) { h.Set("Mcp-Method", "tools/list") }, nil, "Mcp-Method", -32020},
		{"method missing", func(h http.Header) { h.Del("Mcp-Method") }, nil, "Mcp-Method", -32020},
		{"name differs", func(h http.Header) { h.Set("Mcp-Name", "read_file") }, nil, "Mcp-Name", -32020},
		{"name missing", func(h http.Header) { h.Del("Mcp-Name") }, nil, "Mcp-Name", -32020},
		{"name twice", func(h http.Header) { h.Add("Mcp-Name", "deploy") }, nil, "Mcp-Name", -32020},
		{"param differs", func(h http.Header) { h.Set("Mcp-Param-Region", "us-east") }, nil, "Mcp-Param-Region", -32020},
		{"param base64 differs", func(h http.Header) {
			h.Set("Mcp-Param-Region", "=?base64?"+base64.StdEncoding.EncodeToString([]byte("us-east"))+"?=")
		}, nil, "Mcp-Param-Region", -32020},
		{"param bad base64", func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?!!!?=") }, nil, "Mcp-Param-Region", -32020},
		{"param missing", func(h http.Header) { h.Del("Mcp-Param-Count") }, nil, "Mcp-Param-Count", -32020},
		{"nested param differs", func(h http.Header) { h.Set("Mcp-Param-Dry-Run", "false") }, nil, "Mcp-Param-Dry-Run", -32020},
		{"integer as text", func(h http.Header) { h.Set("Mcp-Param-Count", "3.0") }, nil, "Mcp-Param-Count", -32020},
		{"unknown param header", func(h http.Header) { h.Set("Mcp-Param-Note", "hi") }, nil, "Mcp-Param-Note", -32020},
		{"param for an absent argument", nil, body("deploy", map[string]any{"count": 3, "opts": map[string]any{"dry": true}}, "2026-07-28"), "Mcp-Param-Region", -32020},
		{"version header differs", func(h http.Header) { h.Set("Mcp-Protocol-Version", "2025-11-25") }, nil, "Mcp-Protocol-Version", -32020},
		{"no _meta version", nil, body("deploy", args, ""), "", -32602},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := full()
			if c.edit != nil {
				c.edit(h)
			}
			b := c.body
			if b == nil {
				b = body("deploy", args, "2026-07-28")
			}
			e := check(t, h, b)
			require.NotNil(t, e)
			assert.Equal(t, c.header, e.Header)
			assert.Equal(t, c.code, e.Code)
			assert.NotContains(t, e.Message, "\n")
			raw, _ := json.Marshal(e.ID.Raw())
			assert.Equal(t, "7", string(raw), "answered with the request's id")
		})
	}

	// On a 2025 request, a header that is present must agree all the same:
	// a router in front may read it.
	h := legacy.Clone()
	h.Set("Mcp-Name", "read_file")
	e := check(t, h, body("deploy", args, ""))
	require.NotNil(t, e)
	assert.Equal(t, "Mcp-Name", e.Header)
	// Mcp-Name on a method that names nothing, and headers on a batch.
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	h = modern("deploy")
	h.Set("Mcp-Method", "tools/list")
	require.NotNil(t, check(t, h, list))
	h.Del("Mcp-Name")
	require.Nil(t, check(t, h, list))
	batch := []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}]`)
	require.NotNil(t, check(t, http.Header{"Mcp-Name": {"deploy"}}, batch))
	require.Nil(t, check(t, http.Header{}, batch))
	require.NotNil(t, check(t, http.Header{"Mcp-Name": {"deploy"}}, []byte(strings.Repeat(" \n", 100)+string(batch))), "however far the batch starts")
	// A member named in another case is not the member: the SDK reads
	// names exactly, and so does the check.
	cased := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"deploy","name":"read_file","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	e = check(t, modern("deploy"), cased)
	require.NotNil(t, e, "the server acts on name, not Name")
	assert.Equal(t, "Mcp-Name", e.Header)
}

// headerValue is a value as a 2026-07-28 client writes it (SEP-2243):
// as is when it is plain printable ASCII without surrounding blanks,
// else in the base64 form.
func headerValue(s string) string {
	plain := s != "" && s[0] != ' ' && s[len(s)-1] != ' ' && !strings.HasPrefix(s, "=?base64?")
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			plain = false
		}
	}
	if plain || s == "" {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// TestHeadersAgreeingWithTheBodyPass is the property behind the checks:
// for any call of the annotated tool, headers written from its body pass,
// and changing any one of them to another value is a -32020 naming that
// header.
func TestHeadersAgreeingWithTheBodyPass(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		region := rapid.String().Draw(rt, "region")
		count := rapid.Int64Range(-(1<<53-1), 1<<53-1).Draw(rt, "count")
		dry := rapid.Bool().Draw(rt, "dry")
		args := map[string]any{"region": region, "count": count, "opts": map[string]any{"dry": dry}}
		h := modern("deploy")
		h.Set("Mcp-Param-Region", headerValue(region))
		h.Set("Mcp-Param-Count", strconv.FormatInt(count, 10))
		h.Set("Mcp-Param-Dry-Run", strconv.FormatBool(dry))
		b := body("deploy", args, "2026-07-28")
		r, ok := gatemcp.ParseRequest(b)
		require.True(rt, ok)
		if !utf8.ValidString(region) {
			return // JSON carries it as U+FFFD: another value
		}
		require.Nil(rt, gatemcp.CheckHeaders(h, r, params))

		k := rapid.SampledFrom([]string{"Mcp-Method", "Mcp-Name", "Mcp-Param-Region", "Mcp-Param-Count", "Mcp-Param-Dry-Run"}).Draw(rt, "header")
		other := map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": "read_file", "Mcp-Param-Region": headerValue(region + "x"),
			"Mcp-Param-Count": strconv.FormatInt(count+1, 10), "Mcp-Param-Dry-Run": strconv.FormatBool(!dry)}[k]
		h.Set(k, other)
		e := gatemcp.CheckHeaders(h, r, params)
		require.NotNil(rt, e, "%s changed to %q", k, other)
		require.Equal(rt, k, e.Header)
		require.Equal(rt, int64(gatemcp.CodeHeaderMismatch), e.Code)
	})
}

// FuzzCheckHeaders: any body and headers are checked without a panic,
// and a request that passes agrees with every such header it carries.
func FuzzCheckHeaders(f *testing.F) {
	f.Add(body("deploy", map[string]any{"region": "eu", "count": 1}, "2026-07-28"), "tools/call", "deploy", "eu", "2026-07-28")
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"x"}]`), "", "", "", "")
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"prompts/get","params":{"name":"p"}}`), "prompts/get", "p", "=?base64?cA==?=", "")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///x","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`), "resources/read", "file:///x", "", "")
	f.Fuzz(func(t *testing.T, b []byte, method, name, region, version string) {
		r, ok := gatemcp.ParseRequest(b)
		if !ok {
			return
		}
		h := http.Header{}
		for k, v := range map[string]string{"Mcp-Method": method, "Mcp-Name": name, "Mcp-Param-Region": region, "Mcp-Protocol-Version": version} {
			if v != "" {
				h.Set(k, v)
			}
		}
		e := gatemcp.CheckHeaders(h, r, params)
		if e != nil {
			if e.Code != gatemcp.CodeHeaderMismatch && e.Code != gatemcp.CodeInvalidParams || strings.ContainsAny(e.Message, "\r\n") {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		if r.Batch {
			if method != "" || name != "" || region != "" {
				t.Fatalf("headers passed on a batch")
			}
			return
		}
		if method != "" && method != r.Method {
			t.Fatalf("Mcp-Method %q passed for method %q", method, r.Method)
		}
		if name != "" && name != r.Name {
			t.Fatalf("Mcp-Name %q passed for name %q", name, r.Name)
		}
		if region != "" && (r.Method != "tools/call" || r.Name != "deploy") {
			t.Fatalf("Mcp-Param-Region passed on %s %q", r.Method, r.Name)
		}
	})
}

// FuzzDecodeHeaderValue: any value decodes or is refused without a
// panic; the base64 form of any UTF-8 text decodes to it.
func FuzzDecodeHeaderValue(f *testing.F) {
	f.Add("plain")
	f.Add("=?base64?ZXUtd2VzdA==?=")
	f.Add("=?base64?!?=")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = gatemcp.DecodeHeaderValue(s)
		if !utf8.ValidString(s) {
			return
		}
		got, ok := gatemcp.DecodeHeaderValue("=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=")
		if !ok || got != s {
			t.Fatalf("base64 form of %q decoded to %q, %v", s, got, ok)
		}
	})
}
