package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// serverName is the rule of a server's name (gateway.Server.Name).
var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// FuzzReadGatewayFile: any bytes are a gateway file that passes its
// rules, or an error; never a panic. What is read keeps the rules: named
// servers, unique, each a command or a URL.
func FuzzReadGatewayFile(f *testing.F) {
	for _, s := range []string{
		`{"version": 1, "policy": "p.json", "servers": [{"name": "a", "command": ["x", "-y"], "env": ["HOME"], "set_env": {"T": {"file": "t"}}, "restart": {"policy": "never", "min_backoff": "1s"}}]}`,
		`{"version": 1, "policy": "p.json", "servers": [{"name": "r", "url": "https://h/mcp", "ca_file": "ca.pem", "start_timeout": "5s", "call_timeout": "1m"}]}`,
		`{"version": 1, "policy": "p.json", "servers": [{"name": "a", "command": ["x"]}, {"name": "a", "command": ["x"]}]}`,
		`{"version": 1, "policy": "p.json", "servers": [{"name": "a", "command": ["x"], "colour": 1}]}`,
		`{"version": 1, "policy": "p.json", "servers": [{"name": "a", "url": "http://example.com"}]}`,
		`{"version": 1, "policy": "p.json", "servers": [{"name": "a", "command": ["x"], "start_timeout": "-1s"}]}`,
		`{} {}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "gateway.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		g, sum, err := readGatewayFile(p)
		if err != nil {
			return
		}
		if len(sum) != 64 {
			t.Fatalf("sum %q", sum)
		}
		seen := map[string]bool{}
		for _, s := range g.Servers {
			if seen[s.Name] || !serverName.MatchString(s.Name) || (len(s.Command) > 0) == (s.URL != "") {
				t.Fatalf("a server against the rules: %+v", s)
			}
			seen[s.Name] = true
		}
	})
}
