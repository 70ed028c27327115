package upstream

import (
	"encoding/json"
	"testing"
)

// FuzzMethodOf: reading a POSTed body for its method never panics; what
// it reads as a request is one JSON object whose method encoding/json
// reads the same, never an object with a member twice, and a name it
// sets is the body's.
func FuzzMethodOf(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue","arguments":{"n":12345678901234567890}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"result":{}}`))
	f.Add([]byte(`{"method":"tools/list","method":"tools/call"}`))
	f.Add([]byte(`{"\u006dethod":"tools/call","params":{"name":7}}`))
	f.Add([]byte(`[{"method":"ping"}]`))
	f.Add([]byte(`{"method":"ping"} {}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		method, name, ok := methodOf(body)
		if !ok {
			if method != "" && method != notRequest {
				t.Fatalf("not a request, method %q", method)
			}
			return
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name any `json:"name"`
				URI  any `json:"uri"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			// encoding/json is stricter on params' shape only.
			var only struct {
				Method string `json:"method"`
			}
			if err := json.Unmarshal(body, &only); err != nil || only.Method != method {
				t.Fatalf("read %q from %q, encoding/json: %v", method, body, err)
			}
			return
		}
		if method == "" || m.Method != method {
			t.Fatalf("read %q from %q, encoding/json %q", method, body, m.Method)
		}
		if name != "" && name != m.Params.Name && name != m.Params.URI {
			t.Fatalf("name %q from %q", name, body)
		}
	})
}
