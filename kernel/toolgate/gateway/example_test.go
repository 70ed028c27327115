package gateway_test

import (
	"fmt"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

func Example() {
	f, err := gateway.Parse([]byte(`{
	  "version": 1,
	  "policy": "policy.json",
	  "servers": [
	    {"name": "files", "command": ["mcp-files", "/srv"], "env": ["PATH"]},
	    {"name": "github", "url": "https://mcp.example.com/github",
	     "auth": {"kind": "header", "header": "Authorization", "value": {"file": "secrets/github"}}}
	  ]
	}`), "/etc/verity")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("policy:", f.Policy)
	for _, s := range f.Servers {
		fmt.Printf("%s: restart %s, start within %s, pins %s, tool x as %s\n", s.Name, s.Restart.Policy, s.StartTimeout, s.Pins, s.Name+gateway.Separator+"x")
	}
	fmt.Println("github's header from", f.Servers[1].Auth.Value.File)

	_, err = gateway.Parse([]byte(`{"version": 1, "policy": "p", "servers": [
	  {"name": "github", "url": "http://mcp.example.com/github", "command": ["x"]}]}`), "")
	fmt.Println(err)
	// Output:
	// policy: /etc/verity/policy.json
	// files: restart always, start within 30s, pins first-use, tool x as files__x
	// github: restart always, start within 30s, pins first-use, tool x as github__x
	// github's header from /etc/verity/secrets/github
	// gateway: invalid gateway file: 2 violations: /servers/0/url: transport: a server has a command or a url, not both; /servers/0/url: url: "http://mcp.example.com/github" is http to a host that is not loopback: use https (http only to localhost, 127.0.0.0/8 or ::1)
}
