package gateway_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// semantic are the rules the schema does not check; beforeSchema those
// that refuse a text the schema is never run on.
var (
	semantic = map[string]bool{"duplicate_name": true, "transport": true, "url": true, "duration": true, "auth": true,
		"header": true, "secret": true, "env_name": true, "duplicate_env": true, "pins": true}
	beforeSchema = map[string]bool{"size": true, "syntax": true, "duplicate_key": true}
)

// fileGen generates a valid gateway file as a JSON tree.
func fileGen() *rapid.Generator[map[string]any] {
	return rapid.Custom(func(t *rapid.T) map[string]any {
		n := rapid.IntRange(1, 4).Draw(t, "servers")
		names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z0-9][a-z0-9-]{0,6}`), n, n, rapid.ID[string]).Draw(t, "names")
		servers := make([]any, n)
		for i, name := range names {
			servers[i] = serverGen(name).Draw(t, "server")
		}
		f := map[string]any{"version": json.Number("1"), "policy": rapid.SampledFrom([]string{"policy.json", "/etc/p.json", "a/b.json"}).Draw(t, "policy"),
			"servers": servers}
		if rapid.Bool().Draw(t, "schema") {
			f["$schema"] = gateway.SchemaID
		}
		return f
	})
}

var durations = []string{"1ms", "500ms", "1s", "30s", "5m", "1h"}

func secretGen() *rapid.Generator[map[string]any] {
	return rapid.Custom(func(t *rapid.T) map[string]any {
		if rapid.Bool().Draw(t, "from_file") {
			return map[string]any{"file": rapid.SampledFrom([]string{"s", "/run/secrets/x", "d/s"}).Draw(t, "file")}
		}
		return map[string]any{"env": rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,5}`).Draw(t, "env")}
	})
}

func serverGen(name string) *rapid.Generator[map[string]any] {
	return rapid.Custom(func(t *rapid.T) map[string]any {
		s := map[string]any{"name": name}
		if rapid.Bool().Draw(t, "stdio") {
			s["command"] = toAny(rapid.SliceOfN(rapid.StringMatching(`[a-z/.-]{1,5}`), 1, 3).Draw(t, "command"))
			vars := rapid.SliceOfNDistinct(rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,4}`), 0, 4, rapid.ID[string]).Draw(t, "vars")
			k := rapid.IntRange(0, len(vars)).Draw(t, "passed")
			if k > 0 {
				s["env"] = toAny(vars[:k])
			}
			if len(vars) > k {
				set := map[string]any{}
				for _, v := range vars[k:] {
					set[v] = secretGen().Draw(t, "set_env")
				}
				s["set_env"] = set
			}
			if rapid.Bool().Draw(t, "dir") {
				s["dir"] = "work"
			}
		} else {
			s["url"] = rapid.SampledFrom([]string{"https://h/mcp", "https://h:8443/a?b=c", "http://localhost:1/mcp", "http://127.0.0.5/x", "http://[::1]/"}).Draw(t, "url")
			if rapid.Bool().Draw(t, "ca") {
				s["ca_file"] = "ca.pem"
			}
			switch rapid.IntRange(0, 3).Draw(t, "auth") {
			case 1:
				s["auth"] = map[string]any{"kind": "header", "header": rapid.SampledFrom([]string{"Authorization", "X-Api-Key"}).Draw(t, "header"), "value": secretGen().Draw(t, "value")}
			case 2, 3:
				a := map[string]any{"kind": "client_credentials", "token_url": "https://idp/token", "client_id": "gw", "client_secret": secretGen().Draw(t, "cs")}
				if rapid.Bool().Draw(t, "exchange") {
					a["kind"] = "token_exchange"
					a["audience"] = "https://h"
				} else if rapid.Bool().Draw(t, "aud") {
					a["audience"] = "aud"
				}
				if rapid.Bool().Draw(t, "scopes") {
					a["scopes"] = []any{"read", "write"}
				}
				if rapid.Bool().Draw(t, "resource") {
					a["resource"] = "https://h/mcp"
				}
				s["auth"] = a
			}
		}
		if rapid.Bool().Draw(t, "start") {
			s["start_timeout"] = rapid.SampledFrom(durations).Draw(t, "start_timeout")
		}
		if rapid.Bool().Draw(t, "call") {
			s["call_timeout"] = rapid.SampledFrom(durations).Draw(t, "call_timeout")
		}
		if rapid.Bool().Draw(t, "restart") {
			r := map[string]any{}
			if rapid.Bool().Draw(t, "policy") {
				r["policy"] = rapid.SampledFrom([]string{"always", "never"}).Draw(t, "restart_policy")
			}
			i := rapid.IntRange(0, 4).Draw(t, "min")
			j := rapid.IntRange(i, 5).Draw(t, "max")
			if rapid.Bool().Draw(t, "min_set") {
				r["min_backoff"] = durations[i]
			}
			if rapid.Bool().Draw(t, "max_set") && (r["min_backoff"] != nil || j >= 1) {
				r["max_backoff"] = durations[max(j, 1)]
			}
			s["restart"] = r
		}
		if rapid.Bool().Draw(t, "pins") {
			s["pins"] = rapid.SampledFrom([]string{"first-use", "off", "pins.json"}).Draw(t, "pins_mode")
		}
		return s
	})
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// damage changes one value somewhere in the tree: another type, a member
// dropped or added, a string emptied or replaced by a tricky one.
func damage(t *rapid.T, v any, depth int) any {
	tricky := []any{"", "x", "A_B", "http://example.com/x", "https://u:p@h/", "5", "-1s", "48h", "sometimes", "basic",
		"Mcp-Method", "A=B", json.Number("1"), json.Number("1.5"), true, nil, []any{}, map[string]any{}, []any{""}, []any{json.Number("2")}}
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		switch op := rapid.IntRange(0, 3).Draw(t, "map_op"); {
		case op == 0 || len(keys) == 0 || depth > 4:
			if rapid.Bool().Draw(t, "add") {
				x[rapid.SampledFrom([]string{"extra", "name", "url", "command", "auth", "kind", "file", "env", "header", "audience", "dir", "min_backoff"}).Draw(t, "key")] =
					rapid.SampledFrom(tricky).Draw(t, "value")
			} else if len(keys) > 0 {
				delete(x, rapid.SampledFrom(keys).Draw(t, "drop"))
			}
		default:
			k := rapid.SampledFrom(keys).Draw(t, "key")
			x[k] = damage(t, x[k], depth+1)
		}
		return x
	case []any:
		if len(x) == 0 || depth > 4 || rapid.IntRange(0, 4).Draw(t, "list_op") == 0 {
			return rapid.SampledFrom(tricky).Draw(t, "value")
		}
		i := rapid.IntRange(0, len(x)-1).Draw(t, "index")
		x[i] = damage(t, x[i], depth+1)
		return x
	}
	return rapid.SampledFrom(tricky).Draw(t, "value")
}

// plantDefect breaks a rule only Parse checks, in one server.
func plantDefect(t *rapid.T, root map[string]any) {
	servers := root["servers"].([]any)
	s := servers[rapid.IntRange(0, len(servers)-1).Draw(t, "server")].(map[string]any)
	switch rapid.IntRange(0, 10).Draw(t, "defect") {
	case 0:
		s["name"] = servers[0].(map[string]any)["name"]
		root["servers"] = append(servers, s)
	case 1:
		s["url"], s["command"] = "https://h", []any{"x"}
	case 2:
		delete(s, "url")
		delete(s, "command")
	case 3:
		s["url"] = rapid.SampledFrom([]string{"http://example.com/", "https://u@h/", "ftp://h/", "/rel", "https://h/#f"}).Draw(t, "url")
	case 4:
		s["call_timeout"] = rapid.SampledFrom([]string{"5", "0s", "25h", "1us", "x"}).Draw(t, "duration")
	case 5:
		s["restart"] = map[string]any{"min_backoff": "2h"}
	case 6:
		s["auth"] = map[string]any{"kind": "header", "header": rapid.SampledFrom([]string{"Bad Name", "Host", "X"}).Draw(t, "header"),
			"value": map[string]any{"file": "f", "env": "E"}}
	case 7:
		s["auth"] = map[string]any{"kind": "token_exchange", "token_url": "https://i", "client_id": "c", "client_secret": map[string]any{"env": "S"}}
	case 8:
		s["env"] = []any{"A", "A=B"}
	case 9:
		s["pins"] = rapid.SampledFrom([]string{"first_use", "on", "pins.lock"}).Draw(t, "pins")
	default:
		s["set_env"] = map[string]any{"1X": map[string]any{}}
	}
}

// TestReaderAgreesWithSchema: Parse does not run gateway.schema.json; its
// reader says what the schema says. For generated files, valid or with
// random damage, the schema accepts a file exactly when Parse reports no
// rule the schema says too; and every file Parse accepts, the schema
// accepts.
func TestReaderAgreesWithSchema(t *testing.T) {
	s, err := testSchema()
	require.NoError(t, err)
	var accepted, refusedBySchema, refusedSemantic int
	defer func() {
		t.Logf("accepted %d, refused by the schema %d, refused for semantic rules only %d", accepted, refusedBySchema, refusedSemantic)
		require.Positive(t, accepted)
		require.Positive(t, refusedBySchema)
		require.Positive(t, refusedSemantic)
	}()
	rapid.Check(t, func(t *rapid.T) {
		root := fileGen().Draw(t, "file")
		for range rapid.IntRange(0, 2).Draw(t, "defects") {
			plantDefect(t, root)
		}
		var tree any = root
		for range rapid.IntRange(0, 3).Draw(t, "damages") {
			tree = damage(t, tree, 0)
		}
		data, err := json.Marshal(tree)
		require.NoError(t, err)
		decoded, err := canon.Decode(data)
		require.NoError(t, err)
		valid := s.Validate(decoded) == nil
		_, err = gateway.Parse(data, "")
		if err == nil {
			require.True(t, valid, "Parse accepts what the schema refuses:\n%s", data)
			accepted++
			return
		}
		vs := violationsOf(t, err)
		shape := slices.ContainsFunc(vs, func(v pathRule) bool { return !semantic[v.Rule] && !beforeSchema[v.Rule] })
		require.Equal(t, !valid, shape, "schema valid %v; Parse: %v\n%s", valid, err, data)
		if valid {
			refusedSemantic++
		} else {
			refusedBySchema++
		}
	})
}

// TestParseWriteRoundTrip: a File Parse returns is written by MarshalJSON
// as a file Parse reads back to the same File, with the same Hash.
func TestParseWriteRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data, err := json.Marshal(fileGen().Draw(t, "file"))
		require.NoError(t, err)
		f, err := gateway.Parse(data, "/base")
		require.NoError(t, err, "%s", data)
		out, err := f.MarshalJSON()
		require.NoError(t, err)
		g, err := gateway.Parse(out, "/elsewhere")
		require.NoError(t, err, "%s", out)
		require.Equal(t, f, g)
		require.Equal(t, f.Hash(), g.Hash())
	})
}

// TestHashIgnoresFormAndSeesContent: rewriting a file (members in
// another order, other spacing, version 1 as 1.0) keeps its Hash; any
// change to what a server says changes it.
func TestHashIgnoresFormAndSeesContent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tree := fileGen().Draw(t, "file")
		data, err := json.Marshal(tree)
		require.NoError(t, err)
		f, err := gateway.Parse(data, "/d")
		require.NoError(t, err)
		tree["version"] = json.Number("1.0")
		pretty, err := json.MarshalIndent(tree, "", strings.Repeat(" ", rapid.IntRange(0, 4).Draw(t, "indent")))
		require.NoError(t, err)
		g, err := gateway.Parse(pretty, "/d")
		require.NoError(t, err)
		require.Equal(t, f.Hash(), g.Hash())

		servers := tree["servers"].([]any)
		s := servers[rapid.IntRange(0, len(servers)-1).Draw(t, "server")].(map[string]any)
		old := s["call_timeout"]
		s["call_timeout"] = "17s"
		if old == "17s" {
			s["call_timeout"] = "18s"
		}
		changed, err := json.Marshal(tree)
		require.NoError(t, err)
		h, err := gateway.Parse(changed, "/d")
		require.NoError(t, err)
		require.NotEqual(t, f.Hash(), h.Hash())
	})
}

// TestEnvironIsTheAllowListAndSecretsOnly: whatever the parent's
// environment, a command's is exactly the allow-listed variables the
// parent has, plus the secrets set_env names.
func TestEnvironIsTheAllowListAndSecretsOnly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parent := rapid.MapOf(rapid.StringMatching(`[A-Z]{1,3}`), rapid.StringMatching(`[a-z]{1,3}`)).Draw(t, "parent")
		allow := rapid.SliceOfNDistinct(rapid.StringMatching(`[A-Z]{1,3}`), 0, 5, rapid.ID[string]).Draw(t, "allow")
		set := map[string]gateway.Secret{}
		for _, k := range rapid.SliceOfNDistinct(rapid.StringMatching(`S_[A-Z]{1,3}`), 0, 3, rapid.ID[string]).Draw(t, "set") {
			set[k] = gateway.Secret{Env: "SRC"}
		}
		parent["SRC"] = "secret"
		s := gateway.Server{Name: "a", Command: []string{"x"}, Env: allow, SetEnv: set}
		env, err := s.Environ(func(k string) (string, bool) { v, ok := parent[k]; return v, ok })
		require.NoError(t, err)
		want := []string{}
		for _, k := range allow {
			if v, ok := parent[k]; ok {
				want = append(want, k+"="+v)
			}
		}
		for k := range set {
			want = append(want, k+"=secret")
		}
		slices.Sort(want)
		require.Equal(t, want, env)
	})
}
