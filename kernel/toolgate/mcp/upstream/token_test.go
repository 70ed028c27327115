package upstream

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDecodeTokenResponse: the token endpoint's answers read as tokens
// or as refusals naming the endpoint's error, each rule by a case.
func TestDecodeTokenResponse(t *testing.T) {
	long := strings.Repeat("a", maxAccessToken+1)
	for _, c := range []struct {
		name     string
		status   int
		body     string
		exchange bool
		want     token
		err      string // a part of the error; "" for none
	}{
		{"a bearer token", 200, `{"access_token":"abc.def-_~+/=","token_type":"Bearer","expires_in":3600}`, false, token{"abc.def-_~+/=", time.Hour}, ""},
		{"token_type any case", 200, `{"access_token":"t","token_type":"bEaReR"}`, false, token{"t", 0}, ""},
		{"expires_in as a string", 200, `{"access_token":"t","token_type":"Bearer","expires_in":"60"}`, false, token{"t", time.Minute}, ""},
		{"unknown members ignored", 200, `{"access_token":"t","token_type":"Bearer","refresh_token":"r","id_token":{"x":[1]}}`, false, token{"t", 0}, ""},
		{"an exchange", 200, `{"access_token":"t","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`, true, token{"t", 0}, ""},
		{"an exchange giving a JWT", 200, `{"access_token":"t","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:jwt"}`, true, token{"t", 0}, ""},
		{"an exchange without issued_token_type", 200, `{"access_token":"t","token_type":"Bearer"}`, true, token{}, "issued_token_type \"\""},
		{"an exchange giving a refresh token", 200, `{"access_token":"t","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:refresh_token"}`, true, token{}, "issued_token_type"},
		{"no access_token", 200, `{"token_type":"Bearer"}`, false, token{}, "missing"},
		{"empty access_token", 200, `{"access_token":"","token_type":"Bearer"}`, false, token{}, "access_token of 0 bytes"},
		{"huge access_token", 200, `{"access_token":"` + long + `","token_type":"Bearer"}`, false, token{}, "access_token of 16385 bytes"},
		{"a line break in the token", 200, `{"access_token":"a\r\nX-Evil: 1","token_type":"Bearer"}`, false, token{}, "other than visible ASCII"},
		{"a space in the token", 200, `{"access_token":"a b","token_type":"Bearer"}`, false, token{}, "other than visible ASCII"},
		{"not a bearer", 200, `{"access_token":"t","token_type":"mac"}`, false, token{}, `token_type "mac", want Bearer`},
		{"N_A", 200, `{"access_token":"t","token_type":"N_A","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`, true, token{}, "token_type"},
		{"expires_in zero", 200, `{"access_token":"t","token_type":"Bearer","expires_in":0}`, false, token{}, "expires_in 0"},
		{"expires_in negative", 200, `{"access_token":"t","token_type":"Bearer","expires_in":-5}`, false, token{}, "expires_in -5"},
		{"expires_in a float", 200, `{"access_token":"t","token_type":"Bearer","expires_in":1.5}`, false, token{}, "not an integer"},
		{"expires_in huge", 200, `{"access_token":"t","token_type":"Bearer","expires_in":99999999999}`, false, token{}, "expires_in 99999999999"},
		{"a member twice", 200, `{"access_token":"t","access_token":"u","token_type":"Bearer"}`, false, token{}, "not a token response"},
		{"not JSON", 200, `<html>`, false, token{}, "not a token response"},
		{"an array", 200, `[]`, false, token{}, "not a token response"},
		{"a refusal", 400, `{"error":"invalid_grant","error_description":"subject token expired"}`, true, token{}, "invalid_grant: subject token expired"},
		{"a refusal without description", 401, `{"error":"invalid_client"}`, false, token{}, "was refused: invalid_client"},
		{"a refusal with control characters", 400, `{"error":"bad\u001b[31m","error_description":"line1\nline2"}`, false, token{}, "bad?[31m: line1?line2"},
		{"an error without a body", 503, ``, false, token{}, "HTTP 503"},
		{"an error that is not OAuth's", 500, `{"message":"boom"}`, false, token{}, "HTTP 500"},
		{"a redirect", 302, ``, false, token{}, "HTTP 302"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeTokenResponse(c.status, []byte(c.body), c.exchange)
			if c.err == "" {
				if err != nil || got != c.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %+v, want an error with %q", got, c.err)
			}
			e := &endpoint{server: "s", url: "https://as.example/token"}
			err = e.failed(err, c.exchange)
			if !errors.Is(err, ErrCredential) || !strings.Contains(err.Error(), c.err) || strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error %q: want ErrCredential, one line, with %q", err, c.err)
			}
		})
	}
}

// FuzzDecodeTokenResponse: whatever a token endpoint answers, the
// decoder returns a token that can be a header value or a one-line
// ErrCredential, and never panics.
func FuzzDecodeTokenResponse(f *testing.F) {
	f.Add(200, []byte(`{"access_token":"abc","token_type":"Bearer","expires_in":3600}`), false)
	f.Add(200, []byte(`{"access_token":"t","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","expires_in":"60"}`), true)
	f.Add(400, []byte(`{"error":"invalid_grant","error_description":"subject token expired"}`), true)
	f.Add(401, []byte(`{"error":"invalid_client"}`), false)
	f.Add(200, []byte(`{"access_token":"a\r\nb","token_type":"Bearer"}`), false)
	f.Add(200, []byte(`{"access_token":"t","token_type":"Bearer","expires_in":1e3}`), false)
	f.Add(500, []byte(`{"error":"\u0000\ud800"}`), false)
	f.Add(200, []byte(`[[[[[[[[[[[[[[[[[[[[`), false)
	f.Fuzz(func(t *testing.T, status int, body []byte, exchange bool) {
		tok, err := decodeTokenResponse(status, body, exchange)
		if err != nil {
			err = (&endpoint{server: "s", url: "u"}).failed(err, exchange)
			if !errors.Is(err, ErrCredential) {
				t.Fatalf("error %v does not wrap ErrCredential", err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error %q is not one line", err)
			}
			return
		}
		if status != http.StatusOK {
			t.Fatalf("a token from status %d", status)
		}
		if tok.value == "" || len(tok.value) > maxAccessToken || strings.ContainsFunc(tok.value, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
			t.Fatalf("token %q cannot be a header value", tok.value)
		}
		if tok.life < 0 || tok.life > maxExpiresIn*time.Second {
			t.Fatalf("lifetime %v", tok.life)
		}
		h := http.Header{}
		h.Set("Authorization", "Bearer "+tok.value)
		if h.Get("Authorization") != "Bearer "+tok.value {
			t.Fatalf("token %q does not survive a header", tok.value)
		}
	})
}
