package mcp_test

import (
	"fmt"

	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// An allow-list entry for URL-mode elicitations is an https origin; it
// is compared in lower case, without the default port. Anything more
// than an origin, or another scheme, is refused.
func ExampleParseOrigin() {
	for _, s := range []string{"https://Login.Example.com:443", "https://auth.example.org:8443", "http://login.example.com", "https://login.example.com/path"} {
		origin, err := gatemcp.ParseOrigin(s)
		fmt.Println(origin, err)
	}
	// Output:
	// https://login.example.com <nil>
	// https://auth.example.org:8443 <nil>
	//  origin "http://login.example.com": scheme "http": only https URLs are relayed
	//  origin "https://login.example.com/path": an origin is https://host[:port], without a path, query or fragment
}
