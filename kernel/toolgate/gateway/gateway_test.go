package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

const minimal = `{"version": 1, "policy": "policy.json", "servers": [{"name": "files", "command": ["srv"]}]}`

type pathRule struct{ Path, Rule string }

// violationsOf returns the (path, rule) pairs of a refused file, checking
// that the error is what Parse promises.
// tb is what the helpers need of a *testing.T or *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

func violationsOf(t tb, err error) []pathRule {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, gateway.ErrInvalid)
	var ve *gateway.ValidationError
	require.ErrorAs(t, err, &ve)
	require.NotEmpty(t, ve.Violations)
	var out []pathRule
	for _, v := range ve.Violations {
		require.NotEmpty(t, v.Message)
		out = append(out, pathRule{v.Path, v.Rule})
	}
	return out
}

func TestParseMinimal(t *testing.T) {
	f, err := gateway.Parse([]byte(minimal), "/etc/verity")
	require.NoError(t, err)
	require.Equal(t, gateway.File{Version: 1, Policy: "/etc/verity/policy.json", Servers: []gateway.Server{{
		Name: "files", Command: []string{"srv"}, StartTimeout: 30 * time.Second,
		Restart: gateway.Restart{Policy: "always", MinBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second},
		Pins:    "first-use",
	}}}, f)
}

func TestParseFull(t *testing.T) {
	data := `{"$schema": "x", "version": 1.0, "policy": "/abs/policy.json", "servers": [
	  {"name": "files", "command": ["srv", "-v"], "env": ["PATH"], "set_env": {"TOKEN": {"file": "tok"}}, "dir": "work",
	   "start_timeout": "5s", "call_timeout": "1m", "restart": {"policy": "never", "min_backoff": "1s", "max_backoff": "2s"}, "pins": "pins.json"},
	  {"name": "gh-1", "url": "https://mcp.example.com/x", "ca_file": "ca.pem",
	   "auth": {"kind": "token_exchange", "token_url": "http://127.0.0.1:9/token", "client_id": "gw", "client_secret": {"env": "GW_SECRET"},
	            "audience": "https://mcp.example.com", "resource": "https://mcp.example.com/x", "scopes": ["a", "b"]}, "pins": "off"},
	  {"name": "h", "url": "http://[::1]:8080/mcp", "auth": {"kind": "header", "header": "X-Api-Key", "value": {"file": "/k"}}},
	  {"name": "cc", "url": "http://localhost/mcp", "auth": {"kind": "client_credentials", "token_url": "https://idp/t", "client_id": "c",
	   "client_secret": {"file": "s"}, "scopes": ["x"]}}
	]}`
	f, err := gateway.Parse([]byte(data), "/d")
	require.NoError(t, err)
	s := f.Servers[0]
	assert.Equal(t, "/abs/policy.json", f.Policy)
	assert.Equal(t, "/d/work", s.Dir)
	assert.Equal(t, "/d/pins.json", s.Pins)
	assert.Equal(t, map[string]gateway.Secret{"TOKEN": {File: "/d/tok"}}, s.SetEnv)
	assert.Equal(t, gateway.Restart{Policy: "never", MinBackoff: time.Second, MaxBackoff: 2 * time.Second}, s.Restart)
	assert.Equal(t, 5*time.Second, s.StartTimeout)
	assert.Equal(t, time.Minute, s.CallTimeout)
	g := f.Servers[1]
	assert.Equal(t, "/d/ca.pem", g.CAFile)
	assert.Equal(t, "off", g.Pins)
	assert.Equal(t, &gateway.Auth{Kind: "token_exchange", TokenURL: "http://127.0.0.1:9/token", ClientID: "gw",
		ClientSecret: &gateway.Secret{Env: "GW_SECRET"}, Audience: "https://mcp.example.com", Resource: "https://mcp.example.com/x",
		Scopes: []string{"a", "b"}}, g.Auth)
	assert.Equal(t, &gateway.Secret{File: "/k"}, f.Servers[2].Auth.Value)
	assert.Equal(t, &gateway.Secret{File: "/d/s"}, f.Servers[3].Auth.ClientSecret)
}

// TestParseRefuses: each rule, one file that breaks it, and where.
func TestParseRefuses(t *testing.T) {
	srv := func(s string) string { return `{"version": 1, "policy": "p", "servers": [` + s + `]}` }
	for _, tc := range []struct {
		name, data string
		want       []pathRule
	}{
		{"syntax", `{"version": 1,}`, []pathRule{{"", "syntax"}}},
		{"duplicate_key", `{"version": 1, "version": 1, "policy": "p", "servers": []}`, []pathRule{{"", "duplicate_key"}}},
		{"size", `{"policy": "` + strings.Repeat("a", gateway.MaxFileSize) + `"}`, []pathRule{{"", "size"}}},
		{"unknown top", `{"version": 1, "policy": "p", "servers": [{"name": "a", "command": ["x"]}], "extra": 1}`, []pathRule{{"/extra", "unknown_field"}}},
		{"unknown in server", srv(`{"name": "a", "command": ["x"], "cmd": "x"}`), []pathRule{{"/servers/0/cmd", "unknown_field"}}},
		{"missing", `{}`, []pathRule{{"/policy", "required"}, {"/servers", "required"}, {"/version", "required"}}},
		{"version", `{"version": 2, "policy": "p", "servers": [{"name": "a", "command": ["x"]}]}`, []pathRule{{"/version", "version"}}},
		{"version string", `{"version": "1", "policy": "p", "servers": [{"name": "a", "command": ["x"]}]}`, []pathRule{{"/version", "version"}}},
		{"empty policy and servers", `{"version": 1, "policy": "", "servers": []}`, []pathRule{{"/policy", "required"}, {"/servers", "required"}}},
		{"types", srv(`{"name": 1, "command": "x", "start_timeout": 5}`), []pathRule{{"/servers/0/command", "type"}, {"/servers/0/name", "type"}, {"/servers/0/start_timeout", "type"}}},
		{"null", srv(`{"name": "a", "command": ["x"], "auth": null}`), []pathRule{{"/servers/0/auth", "type"}}},
		{"name", srv(`{"name": "Git_Hub", "command": ["x"]}`), []pathRule{{"/servers/0/name", "name"}}},
		{"name too long", srv(`{"name": "` + strings.Repeat("a", 33) + `", "command": ["x"]}`), []pathRule{{"/servers/0/name", "name"}}},
		{"duplicate_name", srv(`{"name": "a", "command": ["x"]}, {"name": "a", "url": "https://h"}`), []pathRule{{"/servers/1/name", "duplicate_name"}}},
		{"neither", srv(`{"name": "a"}`), []pathRule{{"/servers/0", "transport"}}},
		{"both", srv(`{"name": "a", "command": ["x"], "url": "https://h"}`), []pathRule{{"/servers/0/url", "transport"}}},
		{"stdio members on a url", srv(`{"name": "a", "url": "https://h", "env": ["PATH"], "dir": "d"}`), []pathRule{{"/servers/0/dir", "transport"}, {"/servers/0/env", "transport"}}},
		{"remote members on a command", srv(`{"name": "a", "command": ["x"], "ca_file": "c", "auth": {"kind": "header", "header": "X", "value": {"env": "E"}}}`),
			[]pathRule{{"/servers/0/auth", "transport"}, {"/servers/0/ca_file", "transport"}}},
		{"empty command", srv(`{"name": "a", "command": []}`), []pathRule{{"/servers/0/command", "required"}}},
		{"empty program", srv(`{"name": "a", "command": [""]}`), []pathRule{{"/servers/0/command/0", "required"}}},
		{"http not loopback", srv(`{"name": "a", "url": "http://example.com/mcp"}`), []pathRule{{"/servers/0/url", "url"}}},
		{"http lookalike", srv(`{"name": "a", "url": "http://127.0.0.1.example.com/mcp"}`), []pathRule{{"/servers/0/url", "url"}}},
		{"scheme", srv(`{"name": "a", "url": "ftp://h/x"}`), []pathRule{{"/servers/0/url", "url"}}},
		{"relative url", srv(`{"name": "a", "url": "/mcp"}`), []pathRule{{"/servers/0/url", "url"}}},
		{"userinfo", srv(`{"name": "a", "url": "https://u:pw@h/mcp"}`), []pathRule{{"/servers/0/url", "url"}}},
		{"fragment", srv(`{"name": "a", "url": "https://h/mcp#x"}`), []pathRule{{"/servers/0/url", "url"}}},
		{"duration", srv(`{"name": "a", "command": ["x"], "start_timeout": "5", "call_timeout": "48h"}`), []pathRule{{"/servers/0/call_timeout", "duration"}, {"/servers/0/start_timeout", "duration"}}},
		{"backoff order", srv(`{"name": "a", "command": ["x"], "restart": {"min_backoff": "2s", "max_backoff": "1s"}}`), []pathRule{{"/servers/0/restart/min_backoff", "duration"}}},
		{"backoff over default max", srv(`{"name": "a", "command": ["x"], "restart": {"max_backoff": "1ms"}}`), []pathRule{{"/servers/0/restart/max_backoff", "duration"}}},
		{"restart policy", srv(`{"name": "a", "command": ["x"], "restart": {"policy": "sometimes"}}`), []pathRule{{"/servers/0/restart/policy", "enum"}}},
		{"auth kind", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "basic"}}`), []pathRule{{"/servers/0/auth/kind", "enum"}}},
		{"auth header needs", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "header", "token_url": "https://i"}}`),
			[]pathRule{{"/servers/0/auth/header", "auth"}, {"/servers/0/auth/token_url", "auth"}, {"/servers/0/auth/value", "auth"}}},
		{"auth exchange needs audience", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "token_exchange", "token_url": "https://i", "client_id": "c", "client_secret": {"env": "S"}}}`),
			[]pathRule{{"/servers/0/auth/audience", "auth"}}},
		{"auth client credentials", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "client_credentials", "token_url": "http://idp/t", "client_id": "c", "client_secret": {"env": "S"}, "header": "X"}}`),
			[]pathRule{{"/servers/0/auth/header", "auth"}, {"/servers/0/auth/token_url", "url"}}},
		{"header", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "header", "header": "Bad Header", "value": {"env": "S"}}}`), []pathRule{{"/servers/0/auth/header", "header"}}},
		{"transport header", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "header", "header": "mcp-session-id", "value": {"env": "S"}}}`), []pathRule{{"/servers/0/auth/header", "header"}}},
		{"secret both", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "header", "header": "X", "value": {"env": "S", "file": "f"}}}`), []pathRule{{"/servers/0/auth/value", "secret"}}},
		{"secret neither", srv(`{"name": "a", "command": ["x"], "set_env": {"T": {}}}`), []pathRule{{"/servers/0/set_env/T", "secret"}}},
		{"secret value in the file", srv(`{"name": "a", "url": "https://h", "auth": {"kind": "header", "header": "X", "value": "hunter2"}}`), []pathRule{{"/servers/0/auth/value", "type"}}},
		{"env_name", srv(`{"name": "a", "command": ["x"], "env": ["A=B"], "set_env": {"1X": {"env": "Y-Z"}}}`),
			[]pathRule{{"/servers/0/env/0", "env_name"}, {"/servers/0/set_env/1X", "env_name"}, {"/servers/0/set_env/1X/env", "env_name"}}},
		{"duplicate_env", srv(`{"name": "a", "command": ["x"], "env": ["A", "A", "B"], "set_env": {"B": {"env": "Y"}}}`),
			[]pathRule{{"/servers/0/env/1", "duplicate_env"}, {"/servers/0/set_env/B", "duplicate_env"}}},
		{"pins", srv(`{"name": "a", "command": ["x"], "pins": "first_use"}`), []pathRule{{"/servers/0/pins", "pins"}}},
		{"empty set_env", srv(`{"name": "a", "command": ["x"], "set_env": {}}`), []pathRule{{"/servers/0/set_env", "required"}}},
		{"empty strings", srv(`{"name": "a", "command": ["x"], "dir": "", "pins": ""}`), []pathRule{{"/servers/0/dir", "required"}, {"/servers/0/pins", "required"}}},
		{"all at once", `{"version": 3, "policy": 1, "servers": [{"name": "A", "url": "http://x"}, {"name": "b", "command": ["x"], "extra": true}]}`,
			[]pathRule{{"/policy", "type"}, {"/servers/0/name", "name"}, {"/servers/0/url", "url"}, {"/servers/1/extra", "unknown_field"}, {"/version", "version"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gateway.Parse([]byte(tc.data), "")
			require.Equal(t, tc.want, violationsOf(t, err), "%v", err)
		})
	}
}

func TestParseBOMAndOneLineError(t *testing.T) {
	_, err := gateway.Parse(append([]byte("\xef\xbb\xbf"), minimal...), "")
	require.NoError(t, err)
	_, err = gateway.Parse([]byte(`{"version": 1, "policy": "p", "servers": [{"name": "a", "command": ["x"]}, {"name": "a", "command": ["y"]}]}`), "")
	require.EqualError(t, err, `gateway: invalid gateway file: 1 violation: /servers/1/name: duplicate_name: server "a" is named by /servers/0 too`)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gateway.json")
	require.NoError(t, os.WriteFile(p, []byte(minimal), 0o600))
	f, err := gateway.Load(p)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "policy.json"), f.Policy)

	require.NoError(t, os.WriteFile(p, []byte(`{"version": 1}`), 0o600))
	_, err = gateway.Load(p)
	require.ErrorIs(t, err, gateway.ErrInvalid)
	assert.Contains(t, err.Error(), "invalid gateway file "+p)

	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte(" "), gateway.MaxFileSize+1), 0o600))
	_, err = gateway.Load(big)
	require.Equal(t, []pathRule{{"", "size"}}, violationsOf(t, err))

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, err = gateway.Load(fifo) // must not block on a FIFO with no writer
	require.ErrorContains(t, err, "named pipe")
	_, err = gateway.Load(dir)
	require.ErrorContains(t, err, "directory")
	_, err = gateway.Load(filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// testSchema compiles gateway.schema.json on its own, as another program
// would.
var testSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, fmt.Errorf("no loading %s", u) }
	if err := c.AddResource(gateway.SchemaID, bytes.NewReader(gateway.Schema())); err != nil {
		return nil, err
	}
	return c.Compile(gateway.SchemaID)
})

func TestSchemaCompilesAndAcceptsTheExamples(t *testing.T) {
	s, err := testSchema()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(gateway.Schema(), &doc))
	assert.Equal(t, gateway.SchemaID, doc["$id"])
	for _, name := range []string{"testdata/gateway.json"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		tree, err := canon.Decode(data)
		require.NoError(t, err)
		require.NoError(t, s.Validate(tree), name)
		_, err = gateway.Parse(data, "testdata")
		require.NoError(t, err, name)
	}
}

// TestSecrets: files (relative to dir), environment variables, and the
// errors: missing, empty, a FIFO (without blocking), too large, NUL.
func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	write("tok", "s3cret\n")
	write("crlf", "s3cret\r\n")
	write("empty", "\n")
	write("nul", "a\x00b")
	write("big", strings.Repeat("x", gateway.MaxSecretSize+1))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	t.Setenv("GW_TEST_SECRET", "from-env")
	t.Setenv("GW_TEST_EMPTY", "")

	for _, tc := range []struct {
		s       gateway.Secret
		want    string
		wantErr string
	}{
		{gateway.Secret{File: "tok"}, "s3cret", ""},
		{gateway.Secret{File: "crlf"}, "s3cret", ""},
		{gateway.Secret{File: filepath.Join(dir, "tok")}, "s3cret", ""},
		{gateway.Secret{Env: "GW_TEST_SECRET"}, "from-env", ""},
		{gateway.Secret{File: "missing"}, "", "no such file or directory"},
		{gateway.Secret{File: "empty"}, "", "is empty"},
		{gateway.Secret{File: "fifo"}, "", "named pipe"},
		{gateway.Secret{File: "big"}, "", "larger than"},
		{gateway.Secret{File: "nul"}, "", "NUL"},
		{gateway.Secret{Env: "GW_TEST_UNSET_VARIABLE"}, "", "GW_TEST_UNSET_VARIABLE is not set"},
		{gateway.Secret{Env: "GW_TEST_EMPTY"}, "", "GW_TEST_EMPTY is empty"},
		{gateway.Secret{}, "", "exactly one"},
		{gateway.Secret{File: "tok", Env: "GW_TEST_SECRET"}, "", "exactly one"},
	} {
		got, err := tc.s.Read(dir)
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr, "%+v", tc.s)
			continue
		}
		assert.NoError(t, err, "%+v", tc.s)
		assert.Equal(t, tc.want, string(got))
	}
}

// TestSecretErrorsNameServerAndMember: one line naming the server and the
// member, for every secret that cannot be read.
func TestSecretErrorsNameServerAndMember(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "header"), []byte("a\nb"), 0o600))
	data := `{"version": 1, "policy": "p", "servers": [
	  {"name": "github", "url": "https://h", "auth": {"kind": "client_credentials", "token_url": "https://i", "client_id": "c", "client_secret": {"file": "missing"}}},
	  {"name": "h", "url": "https://h", "auth": {"kind": "header", "header": "X", "value": {"file": "header"}}},
	  {"name": "files", "command": ["x"], "set_env": {"TOKEN": {"env": "GW_TEST_NOT_SET"}}}]}`
	f, err := gateway.Parse([]byte(data), dir)
	require.NoError(t, err)
	_, err = f.Servers[0].ReadSecret("auth.client_secret")
	var se *gateway.SecretError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "server github: auth.client_secret: file "+filepath.Join(dir, "missing")+": no such file or directory", err.Error())
	_, err = f.Servers[1].ReadSecret("auth.value")
	assert.EqualError(t, err, "server h: auth.value: the secret holds a line break")
	_, err = f.Servers[2].ReadSecret("auth.value")
	assert.EqualError(t, err, "server files: auth.value: the file names no such secret")

	err = f.CheckSecrets()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 3)
	assert.True(t, strings.HasPrefix(lines[0], "server github: auth.client_secret: "))
	assert.True(t, strings.HasPrefix(lines[1], "server h: auth.value: "))
	assert.Equal(t, "server files: set_env.TOKEN: environment variable GW_TEST_NOT_SET is not set", lines[2])

	_, err = f.Servers[2].Environ(nil)
	assert.EqualError(t, err, "server files: set_env.TOKEN: environment variable GW_TEST_NOT_SET is not set")
}

func TestEnvironPassesOnlyTheAllowList(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok"), []byte("t0k\n"), 0o600))
	f, err := gateway.Parse([]byte(`{"version": 1, "policy": "p", "servers": [
	  {"name": "a", "command": ["x"], "env": ["PATH", "HOME", "ABSENT"], "set_env": {"TOKEN": {"file": "tok"}, "B": {"env": "SRC"}}},
	  {"name": "b", "command": ["x"]}]}`), dir)
	require.NoError(t, err)
	parent := map[string]string{"PATH": "/bin", "HOME": "/h", "SECRET_OF_THE_GATEWAY": "x", "SRC": "v"}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	env, err := f.Servers[0].Environ(lookup)
	require.NoError(t, err)
	assert.Equal(t, []string{"B=v", "HOME=/h", "PATH=/bin", "TOKEN=t0k"}, env)
	env, err = f.Servers[1].Environ(lookup)
	require.NoError(t, err)
	assert.NotNil(t, env, "a nil Env would make exec.Cmd inherit everything")
	assert.Empty(t, env)
}

func TestHashStable(t *testing.T) {
	a, err := gateway.Parse([]byte(minimal), "/d")
	require.NoError(t, err)
	b, err := gateway.Parse([]byte(`{
	  "servers": [{"command": ["srv"], "restart": {"policy": "always", "max_backoff": "10s"}, "name": "files", "pins": "first-use", "start_timeout": "30000ms"}],
	  "policy": "policy.json", "version": 1e0}`), "/d")
	require.NoError(t, err)
	assert.Equal(t, a.Hash(), b.Hash(), "defaults spelled out, order and spacing do not change the hash")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, a.Hash())
	c, err := gateway.Parse([]byte(minimal), "/elsewhere")
	require.NoError(t, err)
	assert.NotEqual(t, a.Hash(), c.Hash(), "the policy resolves to another file")
	b.Servers[0].CallTimeout = time.Second
	assert.NotEqual(t, a.Hash(), b.Hash())
}

func TestErrorsAreNotPanics(t *testing.T) {
	for _, data := range []string{"", "null", "[]", `"x"`, `{"servers": null}`, `{"servers": [null]}`, `{"servers": [{"auth": {"value": null}}]}`,
		`{"version": 1e999999}`, `{"version": -0}`, `{"servers": [{"set_env": {"": {"file": ""}}}]}`} {
		_, err := gateway.Parse([]byte(data), "/d")
		require.Error(t, err, data)
		require.True(t, errors.Is(err, gateway.ErrInvalid), data)
	}
}
