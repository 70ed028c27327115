package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/belief/server"
)

func ExampleNew() {
	b, _ := belief.NewServer(context.Background(), belief.NewMemoryStorage())
	defer b.Close()
	ts := httptest.NewServer(server.New(b))
	defer ts.Close()

	post := func(path, body string) map[string]any {
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		fmt.Println(resp.StatusCode)
		return out
	}
	created := post("/v1/sessions", `{"ontology":{"hypothesis_space_id":"db","hypothesis_version":"v1",
		"causal_graph_ref":"graphstore://postgres-repl","causal_graph_version":"v17"},
		"hypotheses":["disk","network","config"]}`)
	id := created["session_id"].(string)
	bad := post("/v1/sessions", `{"hypotheses":["a",1],"extra":true}`)
	for _, v := range bad["error"].(map[string]any)["details"].(map[string]any)["violations"].([]any) {
		fmt.Println(v.(map[string]any)["path"], v.(map[string]any)["rule"])
	}
	r := post("/v1/sessions/"+id+"/eliminate", `{"source_id":"adapter://sre","observation_id":"probe-1","eliminated":["disk","nope"]}`)
	fmt.Println(r["error"].(map[string]any)["code"])
	r = post("/v1/sessions/"+id+"/eliminate", `{"source_id":"adapter://sre","observation_id":"probe-1","eliminated":["disk","network"]}`)
	fmt.Println(r["applied_eliminated"], r["snapshot"].(map[string]any)["survivors"])
	r = post("/v1/sessions/"+id+"/terminate", `{}`)
	fmt.Println(r["approved"], r["reason"])
	// Output:
	// 201
	// 400
	// /extra unknown_field
	// /hypotheses/1 type
	// /ontology required
	// 400
	// INVALID_HYPOTHESIS_ID
	// 200
	// [disk network] [config]
	// 200
	// true exactly one survivor remains and no obligation is active
}
