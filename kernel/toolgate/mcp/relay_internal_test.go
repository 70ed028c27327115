package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// rootsModel is the naive model of which client's roots an upstream
// sees: the clients in order of arrival, whether the running upstream was
// offered roots, whom it last asked, whether a renewal runs.
type rootsModel struct {
	clients    []int // ids
	roots      map[int]bool
	advertised bool
	owner      int // 0: none
	renewing   bool
}

func (m *rootsModel) first() int {
	for _, c := range m.clients {
		if m.roots[c] {
			return c
		}
	}
	return 0
}

// TestRootsFollowTheFirstClientOfferingThem: a state machine of clients
// arriving (offering roots or not), leaving, saying their roots changed,
// the upstream asking and being started again, against rootsModel: the
// upstream is started again only when a client offering roots arrives
// and it was not offered them (once at a time), asks only the first
// connected client offering roots, and is told its roots changed
// exactly when that client's roots change, when it leaves and another
// offers roots, or when one arrives after none.
func TestRootsFollowTheFirstClientOfferingThem(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := NewProxy(nil)
		require.NoError(rt, p.SetRelay(RelayOptions{Renew: func(context.Context) error { return nil }}))
		m := &rootsModel{roots: map[int]bool{}}
		sessions := map[int]*sdk.ServerSession{}
		byPtr := map[*sdk.ServerSession]int{}
		next := 0
		pick := func(rt *rapid.T) int {
			if len(m.clients) == 0 {
				rt.Skip("no client")
			}
			return rapid.SampledFrom(m.clients).Draw(rt, "client")
		}
		rt.Repeat(map[string]func(*rapid.T){
			"arrive": func(rt *rapid.T) {
				next++
				roots := rapid.Bool().Draw(rt, "roots")
				ss := new(sdk.ServerSession)
				sessions[next], byPtr[ss] = ss, next
				p.rl.mu.Lock()
				renew, notify, added := p.rl.join(&downstream{ss: ss, roots: roots})
				p.rl.mu.Unlock()
				wantRenew := roots && !m.advertised && !m.renewing
				wantNotify := roots && m.advertised && m.first() == 0
				m.clients = append(m.clients, next)
				m.roots[next] = roots
				if wantRenew {
					m.renewing = true
				}
				assert.True(rt, added)
				assert.Equal(rt, wantRenew, renew, "renew")
				assert.Equal(rt, wantNotify, notify, "notify")
			},
			"leave": func(rt *rapid.T) {
				id := pick(rt)
				p.rl.mu.Lock()
				notify := p.rl.leave(sessions[id])
				p.rl.mu.Unlock()
				m.clients = slices.DeleteFunc(m.clients, func(c int) bool { return c == id })
				assert.Equal(rt, m.advertised && m.owner == id && m.first() != 0, notify, "notify")
				if m.owner == id {
					m.owner = 0
				}
			},
			"changed": func(rt *rapid.T) {
				id := pick(rt)
				p.rl.mu.Lock()
				got := p.rl.changed(sessions[id])
				p.rl.mu.Unlock()
				assert.Equal(rt, m.advertised && m.first() == id, got)
			},
			"ask": func(rt *rapid.T) {
				p.rl.mu.Lock()
				d, wait := p.rl.asked()
				p.rl.mu.Unlock()
				want := m.first()
				if want == 0 {
					assert.Nil(rt, d)
					assert.NotNil(rt, wait, "a roots/list without a client waits for one")
					return
				}
				require.NotNil(rt, d)
				assert.Equal(rt, want, byPtr[d.ss])
				m.owner = want
			},
			"start upstream": func(rt *rapid.T) {
				opts := p.ClientOptions()
				m.advertised, m.owner, m.renewing = m.first() != 0, 0, false
				p.rl.mu.Lock()
				p.rl.renewing = nil
				p.rl.mu.Unlock()
				//lint:ignore SA1019 the proxy relays roots to clients on protocols before 2026-07-28, where they are not deprecated
				assert.Equal(rt, m.advertised, opts.Capabilities.RootsV2 != nil, "offered roots")
			},
		})
	})
}

// TestOnlyAllowListedHTTPSOriginsPass: a URL made of a scheme, user
// information, host, port and path is relayed exactly when it is https,
// without user information, its host ASCII and its port valid; its
// origin then is the scheme and host in lower case and the port unless
// 443, and reads back as itself.
func TestOnlyAllowListedHTTPSOriginsPass(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		scheme := rapid.SampledFrom([]string{"https", "HTTPS", "Https", "http", "ftp", "javascript", "data"}).Draw(rt, "scheme")
		user := rapid.SampledFrom([]string{"", "user@", "good.example@", "u:p@", "%40@"}).Draw(rt, "user")
		host := rapid.SampledFrom([]string{"good.example", "GOOD.Example", "evil.example", "xn--bcher-kva.example", "bücher.example", "good.example.", "127.0.0.1", "[::1]", "g%6fod.example", ""}).Draw(rt, "host")
		port := rapid.SampledFrom([]string{"", ":443", ":8443", ":0", ":65536", ":08443", ":", ":x"}).Draw(rt, "port")
		path := rapid.SampledFrom([]string{"", "/", "/device?code=1", "#frag", "/a@b", `\@evil.example`}).Draw(rt, "path")
		raw := scheme + "://" + user + host + port + path
		origin, err := elicitOrigin(raw)

		ascii := !strings.ContainsFunc(host, func(r rune) bool { return r > 0x7e })
		validPort := slices.Contains([]string{"", ":443", ":8443"}, port)
		want := strings.EqualFold(scheme, "https") && user == "" && host != "" && ascii && validPort &&
			!strings.Contains(host, "%") && !strings.Contains(path, `\`)
		require.Equal(rt, want, err == nil, "%s: %v", raw, err)
		if err != nil {
			return
		}
		wantOrigin := "https://" + strings.ToLower(host)
		if port == ":8443" {
			wantOrigin += port
		}
		assert.Equal(rt, wantOrigin, origin, raw)
		again, err := ParseOrigin(origin)
		require.NoError(rt, err)
		assert.Equal(rt, origin, again)
		u, err := url.Parse(raw)
		require.NoError(rt, err)
		assert.Nil(rt, u.User)
	})
}

// FuzzElicitOrigin: any URL is read without a panic; one accepted has an
// origin that reads back as itself, names no user, and is the origin of
// any URL under it.
func FuzzElicitOrigin(f *testing.F) {
	for _, s := range []string{"https://login.example.com/x", "https://a@b", "HTTPS://X.Y:443", "https://[::1]:8443/", "https://b\u00fccher.example", "https://x%2ey", "http://x", "https:x", "https://x:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		origin, err := elicitOrigin(raw)
		if err != nil {
			return
		}
		if strings.Contains(origin, "@") || !strings.HasPrefix(origin, "https://") || origin != strings.ToLower(origin) {
			t.Fatalf("%q: origin %q", raw, origin)
		}
		again, err := ParseOrigin(origin)
		if err != nil || again != origin {
			t.Fatalf("%q: origin %q reads back as %q, %v", raw, origin, again, err)
		}
		if o, err := elicitOrigin(origin + "/path?q#f"); err != nil || o != origin {
			t.Fatalf("%q: a URL under origin %q is %q, %v", raw, origin, o, err)
		}
	})
}

// TestParseOriginRefusesMoreThanAnOrigin: an allow-list entry is an
// origin, nothing else.
func TestParseOriginRefusesMoreThanAnOrigin(t *testing.T) {
	for _, s := range []string{"http://a.example", "https://a.example/path", "https://a.example?q", "https://a.example#f", "https://u@a.example", "https://", "a.example", "https://a.example:0", "https://bücher.example"} {
		_, err := ParseOrigin(s)
		assert.Error(t, err, s)
	}
	for s, want := range map[string]string{"https://A.Example": "https://a.example", "https://a.example:443/": "https://a.example", "https://a.example:8443": "https://a.example:8443"} {
		got, err := ParseOrigin(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	err := NewProxy(nil).SetRelay(RelayOptions{URLOrigins: []string{"http://x.example"}})
	assert.ErrorContains(t, err, `origin "http://x.example"`)
	assert.Error(t, NewProxy(nil).SetRelay(RelayOptions{SamplingTools: 7}))
}

// TestSamplingWithTooManyToolsRefused: a sampling request offering more
// than maxSamplingTools tools is refused before any is checked.
func TestSamplingWithTooManyToolsRefused(t *testing.T) {
	p := NewProxy(nil)
	checked := 0
	require.NoError(t, p.SetRelay(RelayOptions{SamplingTools: SamplingDrop, MayCall: func(context.Context, *sdk.CallToolRequest, string) bool { checked++; return true }}))
	tools := make([]*sdk.Tool, maxSamplingTools+1)
	for i := range tools {
		tools[i] = &sdk.Tool{Name: fmt.Sprint("t", i)}
	}
	who := asked{context.Background(), &sdk.CallToolRequest{}}
	//lint:ignore SA1019 the test plays a client and an upstream on protocols before 2026-07-28, where sampling is not deprecated
	_, err := p.checkSampling(context.Background(), who, &sdk.CreateMessageWithToolsParams{Tools: tools}, true)
	assert.ErrorContains(t, err, "257 tools, more than 256")
	assert.Zero(t, checked)
	//lint:ignore SA1019 the test plays a client and an upstream on protocols before 2026-07-28, where sampling is not deprecated
	out, err := p.checkSampling(context.Background(), who, &sdk.CreateMessageWithToolsParams{Tools: tools[:maxSamplingTools]}, true)
	require.NoError(t, err)
	assert.Len(t, out.Tools, maxSamplingTools)
}

// BenchmarkDownstreamMiddleware: what DownstreamMiddleware adds to a
// tools/call answered with a 1 KiB result (bare: the call without it).
func BenchmarkDownstreamMiddleware(b *testing.B) {
	p := NewProxy(nil)
	raw := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1000) + `"}]}`)
	next := func(context.Context, string, sdk.Request) (sdk.Result, error) { return &RawResult{JSON: raw}, nil }
	req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "read"}}
	for _, tc := range []struct {
		name string
		h    sdk.MethodHandler
	}{{"bare", next}, {"wrapped", p.DownstreamMiddleware()(next)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.h(context.Background(), MethodCallTool, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzInputRequestsFound: whenever a result has an inputRequests member
// as a decoder may read it (any case, any escape), the cheap search that
// runs on every result says it may; reading never panics.
func FuzzInputRequestsFound(f *testing.F) {
	for _, s := range []string{`{"content":[]}`, `{"inputRequests":{}}`, `{"INPUTREQUESTS":{"a":1}}`, `{"inputReq\u0075ests":{}}`, `{"a":"q","inputrequests":1}`, `{"inputRequests":1,"inputRequests":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		member, err := inputRequestsOf(raw)
		if (member != nil || (err != nil && json.Valid(raw) && strings.Contains(err.Error(), "twice"))) && !mayRequestInput(raw) {
			t.Fatalf("%q has input requests the search misses", raw)
		}
	})
}

// TestInputRequestsSpelledOtherwiseRefused: input requests named in
// another case or with escapes are policed too, and a result that names
// them twice is refused.
func TestInputRequestsSpelledOtherwiseRefused(t *testing.T) {
	p := NewProxy(nil)
	who := asked{context.Background(), &sdk.CallToolRequest{}}
	url := `{"e":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://evil.example/","elicitationId":"x"}}}`
	for _, raw := range []string{
		`{"inputRequests":` + url + `}`,
		`{"INPUTREQUESTS":` + url + `}`,
		`{"inputReq\u0075ests":` + url + `}`,
		`{"inputRequests":{},"inputRequests":` + url + `}`,
		`{"inputRequests":` + url + `,"inputRequests":{}}`,
		`{"inputRequests":"x"}`,
		`{"inputRequests":{"e":{"method":"tasks/get","params":{}}}}`,
	} {
		res := p.policeInputRequests(context.Background(), who, &RawResult{JSON: json.RawMessage(raw)})
		cr, ok := res.(*sdk.CallToolResult)
		if assert.True(t, ok, raw) {
			assert.True(t, cr.IsError, raw)
		}
	}
	for _, raw := range []string{`{"content":[{"type":"text","text":"no requests here"}]}`, `{"content":[],"inputRequests":{"r":{"method":"roots/list","params":{}}}}`} {
		res := p.policeInputRequests(context.Background(), who, &RawResult{JSON: json.RawMessage(raw)})
		assert.IsType(t, &RawResult{}, res, raw)
	}
}
