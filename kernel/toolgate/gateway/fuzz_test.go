package gateway_test

import (
	"errors"
	"os"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// FuzzParse: any bytes give a File or a *ValidationError wrapping
// ErrInvalid, never a panic; a File accepted is written and read back to
// itself, with the same Hash.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/gateway.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(minimal))
	f.Add([]byte(`{"version": 1, "policy": "p", "servers": [{"name": "a", "url": "http://[::1]/x", "auth": {"kind": "client_credentials", "token_url": "https://i", "client_id": "c", "client_secret": {"env": "S"}, "scopes": ["a"]}}]}`))
	f.Add([]byte(`{"version": 1, "policy": "p", "servers": [{"name": "a", "command": ["x"], "env": ["A"], "set_env": {"B": {"file": "f"}}, "restart": {"min_backoff": "1s"}}]}`))
	f.Add([]byte(`{"version": 1e0, "policy": "p", "servers": [{"name": "a", "url": "https://u:p@h/#x", "auth": {"kind": "header"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := gateway.Parse(data, "/d")
		if err != nil {
			var ve *gateway.ValidationError
			if !errors.Is(err, gateway.ErrInvalid) || !errors.As(err, &ve) || len(ve.Violations) == 0 {
				t.Fatalf("Parse: %v is not a ValidationError with violations", err)
			}
			return
		}
		out, err := g.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		h, err := gateway.Parse(out, "/d")
		if err != nil {
			t.Fatalf("written %s, read back: %v", out, err)
		}
		if g.Hash() != h.Hash() {
			t.Fatalf("hash changed writing %s", out)
		}
	})
}
