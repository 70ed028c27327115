package server

import "strings"

// casesTokenFile is the authenticator of the 401 cases of httpCases.
var casesTokenFile = func() *TokenFile {
	tf, err := ParseTokenFile(strings.NewReader(digestLine("cases-token", "carol")))
	if err != nil {
		panic(err)
	}
	return tf
}()

// The 401 of every route: the session was declared anonymously, then
// the handler requires a token the request does not carry.
func init() {
	requireAuth := func(e *env) { e.h.auth = casesTokenFile }
	for _, rt := range routes {
		path := strings.ReplaceAll(strings.ReplaceAll(rt.path, "{session_id}", "{sid}"), "{obligation_id}", "ob")
		httpCases = append(httpCases,
			httpCase{name: "Unauthenticated " + rt.method + " " + rt.path, setup: requireAuth, method: rt.method, path: path,
				body: `{}`, status: 401, code: CodeUnauthenticated},
			httpCase{name: "WrongToken " + rt.method + " " + rt.path, setup: requireAuth, method: rt.method, path: path,
				header: map[string]string{"Authorization": "Bearer not-the-token"}, body: `{}`, status: 401, code: CodeUnauthenticated})
	}
}
