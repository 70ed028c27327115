package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789"
)

// writeTokenFile writes a token file for alice and bob.
func writeTokenFile(t *testing.T) string {
	t.Helper()
	line := func(tok, rest string) string {
		d := sha256.Sum256([]byte(tok))
		return "sha256:" + hex.EncodeToString(d[:]) + " " + rest + "\n"
	}
	p := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(p, []byte("# principals\n"+line(aliceToken, "alice ops")+line(bobToken, "bob")), 0o600))
	return p
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their paths and a pool that trusts it.
func writeCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "beliefserver test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func bearerCall(t *testing.T, c *http.Client, token, method, url, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return resp.StatusCode, resp.Header, out
}

// TestTokenFileOverTLS: the command with -token-file, -tls-cert and
// -tls-key serves HTTPS; a request without a token or with a wrong one
// is 401 with WWW-Authenticate: Bearer, and bob cannot see alice's
// session.
func TestTokenFileOverTLS(t *testing.T) {
	certFile, keyFile, pool := writeCert(t)
	base, stop, logs := start(t, "-token-file", writeTokenFile(t), "-tls-cert", certFile, "-tls-key", keyFile)
	defer func() { require.NoError(t, stop()) }()
	url := "https://" + strings.TrimPrefix(base, "http://")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	status, _, out := bearerCall(t, c, aliceToken, "POST", url+"/v1/sessions", declare)
	require.Equal(t, 201, status, out)
	sid := out["session_id"].(string)
	for _, tok := range []string{"", "wrong", bobToken + " "} {
		status, h, out := bearerCall(t, c, tok, "GET", url+"/v1/sessions/"+sid, "")
		if tok == bobToken+" " {
			assert.Equal(t, 404, status, "another principal: %v", out) // the trailing space is trimmed: bob's token
			continue
		}
		assert.Equal(t, 401, status, "%q", tok)
		assert.Equal(t, `Bearer realm="verity"`, h.Get("WWW-Authenticate"))
		assert.Equal(t, map[string]any{"error": map[string]any{"code": "UNAUTHENTICATED", "message": "authentication required"}}, out)
	}
	status, _, _ = bearerCall(t, c, aliceToken, "GET", url+"/v1/sessions/"+sid, "")
	assert.Equal(t, 200, status)
	// Plain HTTP on the TLS port gets no session.
	resp, err := http.Get(base + "/v1/sessions/" + sid)
	if err == nil {
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		resp.Body.Close()
	}
	assert.Contains(t, logs.String(), `"status":201,`)
	assert.Contains(t, logs.String(), `"principal":"alice"`, "the request log names the principal")
	assert.Contains(t, logs.String(), `"auth":"token-file"`)
	assert.Contains(t, logs.String(), `"tls":true`)
}

// TestOwnerSurvivesCommandRestart: with -data, a session declared by
// alice is still hers after the server restarts.
func TestOwnerSurvivesCommandRestart(t *testing.T) {
	dir, tokens := t.TempDir(), writeTokenFile(t)
	base, stop, _ := start(t, "-data", dir, "-token-file", tokens)
	status, _, out := bearerCall(t, http.DefaultClient, aliceToken, "POST", base+"/v1/sessions", declare)
	require.Equal(t, 201, status, out)
	sid := out["session_id"].(string)
	require.NoError(t, stop())

	base, stop, _ = start(t, "-data", dir, "-token-file", tokens)
	defer func() { require.NoError(t, stop()) }()
	status, _, _ = bearerCall(t, http.DefaultClient, bobToken, "GET", base+"/v1/sessions/"+sid+"/audit", "")
	assert.Equal(t, 404, status)
	status, _, _ = bearerCall(t, http.DefaultClient, bobToken, "POST", base+"/v1/sessions/"+sid+"/eliminate",
		`{"source_id":"s","observation_id":"o","eliminated":["a"]}`)
	assert.Equal(t, 404, status)
	status, _, out = bearerCall(t, http.DefaultClient, aliceToken, "GET", base+"/v1/sessions/"+sid+"/audit", "")
	assert.Equal(t, 200, status)
	assert.Len(t, out["events"], 1, "bob's attempts recorded nothing")
}

// TestLoopbackUnlessAuthenticated: without -token-file the server binds
// only loopback addresses; another address needs -token-file or
// -insecure-no-auth.
func TestLoopbackUnlessAuthenticated(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1", "localhost", "LOCALHOST", "127.0.0.2"} {
		assert.True(t, loopback(host), host)
	}
	for _, host := range []string{"", "0.0.0.0", "::", "192.168.1.1", "example.com", "localhost.example.com"} {
		assert.False(t, loopback(host), host)
	}
	_, stop, _ := start(t, "-addr", "0.0.0.0:0", "-token-file", writeTokenFile(t))
	require.NoError(t, stop())
	_, stop, logs := start(t, "-addr", "0.0.0.0:0", "-insecure-no-auth")
	require.NoError(t, stop())
	assert.Contains(t, logs.String(), `"auth":"none"`)
}

// TestSecurityUsageExit2: every authentication or TLS mistake exits 2
// with a message naming it.
func TestSecurityUsageExit2(t *testing.T) {
	certFile, keyFile, _ := writeCert(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad-tokens")
	require.NoError(t, os.WriteFile(bad, []byte("# ok\nsha256:abcd alice\n"), 0o600))
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not pem"), 0o600))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"-addr", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"-addr", ":0"}, "not a loopback address"},
		{[]string{"-addr", "192.0.2.1:8080"}, "not a loopback address"},
		{[]string{"-token-file", bad}, "line 2"},
		{[]string{"-token-file", filepath.Join(dir, "missing")}, "-token-file"},
		{[]string{"-token-file", writeTokenFile(t), "-insecure-no-auth"}, "contradicts"},
		{[]string{"-tls-cert", certFile}, "go together"},
		{[]string{"-tls-key", keyFile}, "go together"},
		{[]string{"-tls-cert", garbage, "-tls-key", keyFile}, "-tls-cert"},
		{[]string{"-tls-cert", keyFile, "-tls-key", certFile}, "-tls-cert"},
	} {
		var out bytes.Buffer
		cmd := command(append([]string{"-addr", "127.0.0.1:0"}, tc.args...)...)
		cmd.Stderr = &out
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%q: still serving after 20s, want exit 2", tc.args)
			continue
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%q", tc.args)
		assert.Equal(t, 2, ee.ExitCode(), "%q: %s", tc.args, out.String())
		assert.Contains(t, out.String(), tc.says, "%q", tc.args)
	}
}
