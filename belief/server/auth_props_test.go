package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/belief"
)

// TestOnlyTheOwnerReachesASession is a state machine against a naive
// model (a map from session to the principal that declared it): tokens
// of three principals, no token and a wrong token declare sessions and
// read, audit and write sessions in any order, over a cache of one open
// session so that sessions are closed and read back from their logs
// between requests. A request without a valid token is 401; a request on
// a session of another principal, or on an id that names no session, is
// 404 and changes nothing; the owner's requests succeed, and every
// session's log holds exactly the events its owner's accepted writes
// made.
func TestOnlyTheOwnerReachesASession(t *testing.T) {
	tokens := []string{"tok-a", "tok-b", "tok-c"}
	var file strings.Builder
	for i, tok := range tokens {
		file.WriteString(digestLine(tok, fmt.Sprintf("p%d", i)) + "\n")
	}
	tf, err := ParseTokenFile(strings.NewReader(file.String()))
	if err != nil {
		t.Fatal(err)
	}
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		bs, err := belief.NewServer(context.Background(), belief.NewMemoryStorage(), belief.WithCacheSize(1))
		if err != nil {
			rt.Fatal(err)
		}
		defer bs.Close()
		h := New(bs, WithAuthenticator(tf))
		owner := map[string]int{} // session id → index of its principal's token
		events := map[string]int{}
		seen := map[string]map[string]bool{} // session → observation ids applied
		var ids []string
		do := func(tok, method, path, body string) (int, string) {
			r := httptest.NewRequest(method, path, strings.NewReader(body))
			if tok != "" {
				r.Header.Set("Authorization", "Bearer "+tok)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w.Code, w.Body.String()
		}
		caller := rapid.IntRange(-2, len(tokens)-1) // -2 no token, -1 a wrong one
		token := func(i int) string {
			switch i {
			case -2:
				return ""
			case -1:
				return "not-a-token"
			}
			return tokens[i]
		}
		pick := func(t *rapid.T) string {
			if len(ids) == 0 || rapid.IntRange(0, 4).Draw(t, "unknown") == 0 {
				return "01900000-0000-7000-8000-000000000000"
			}
			return rapid.SampledFrom(ids).Draw(t, "session")
		}
		rt.Repeat(map[string]func(*rapid.T){
			"declare": func(t *rapid.T) {
				c := caller.Draw(t, "caller")
				code, body := do(token(c), "POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":["a","b","c","d"]}`)
				if c < 0 {
					if code != 401 {
						t.Fatalf("declare without a valid token: %d %s", code, body)
					}
					return
				}
				if code != 201 {
					t.Fatalf("declare: %d %s", code, body)
				}
				var out DeclareResponse
				if err := decodeJSON(strings.NewReader(body), &out); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, out.SessionID)
				owner[out.SessionID], events[out.SessionID], seen[out.SessionID] = c, 1, map[string]bool{}
			},
			"read": func(t *rapid.T) {
				c, id := caller.Draw(t, "caller"), pick(t)
				path := "/v1/sessions/" + id + rapid.SampledFrom([]string{"", "/audit"}).Draw(t, "route")
				code, body := do(token(c), "GET", path, "")
				want := expect(c, id, owner)
				if code != want {
					t.Fatalf("GET %s by %d (owner %v): %d, want %d: %s", path, c, owner[id], code, want, body)
				}
				if want == 200 && strings.HasSuffix(path, "/audit") {
					if n := strings.Count(body, `"event_id"`); n != events[id] {
						t.Fatalf("%d events, the model has %d", n, events[id])
					}
				}
			},
			"eliminate": func(t *rapid.T) {
				c, id := caller.Draw(t, "caller"), pick(t)
				obs := rapid.StringMatching(`o[0-9]{1,3}`).Draw(t, "observation")
				code, body := do(token(c), "POST", "/v1/sessions/"+id+"/eliminate",
					`{"source_id":"s","observation_id":"`+obs+`","eliminated":["a"]}`)
				want := expect(c, id, owner)
				if code != want {
					t.Fatalf("eliminate by %d on %s (owner %v): %d, want %d: %s", c, id, owner[id], code, want, body)
				}
				if code == 200 && !seen[id][obs] {
					seen[id][obs] = true // a new key is one event; the same key and body again, none
					events[id]++
				}
			},
		})
		// Every log holds what its owner's writes made, and nobody else
		// reads it.
		for _, id := range ids {
			code, body := do(tokens[owner[id]], "GET", "/v1/sessions/"+id+"/audit", "")
			if code != 200 || strings.Count(body, `"event_id"`) != events[id] {
				rt.Fatalf("owner's audit: %d, want %d events: %s", code, events[id], body)
			}
			for i := range tokens {
				if i != owner[id] {
					if code, _ := do(tokens[i], "GET", "/v1/sessions/"+id+"/audit", ""); code != 404 {
						rt.Fatalf("principal %d reads %s of %d: %d", i, id, owner[id], code)
					}
				}
			}
		}
		checks++
	})
	t.Logf("%d checks", checks)
}

// expect is the model's status for caller c on session id.
func expect(c int, id string, owner map[string]int) int {
	if c < 0 {
		return 401
	}
	if o, ok := owner[id]; !ok || o != c {
		return 404
	}
	return 200
}
