// Package bearer makes an MCP server over streamable HTTP an OAuth 2.1
// protected resource, as the MCP authorization specification describes:
// every request carries a bearer token — a JWT (RFC 7519, RFC 9068)
// issued by one authorization server — that the resource verifies
// itself, with the issuer's public keys, before the request reaches the
// MCP transport.
//
// # What a token must be
//
// Verifier.Verify accepts a token only when all of these hold:
//
//   - it is at most MaxTokenBytes (16 KiB) long;
//   - it is signed with RS256, ES256 or EdDSA by a key of the KeySet,
//     found by its "kid" (a token without one is checked with the set's
//     only key, when it has one key), and with the one algorithm that
//     key's type implies: RSA signs RS256, EC P-256 ES256, OKP Ed25519
//     EdDSA. "alg": "none" and the HMAC algorithms are refused before a
//     key is looked up, so a public key can never be used as an HMAC
//     secret;
//   - its header has no "crit" member (the verifier implements no JWS
//     extension, so by RFC 7515 §4.1.11 any token that lists one is
//     invalid) and no "b64" other than true (RFC 7797's unencoded
//     payloads);
//   - "iss" is exactly Config.Issuer and "aud" names Config.Audience (the
//     resource's own URL, so that a token minted for another resource is
//     refused);
//   - "exp" is present and not past, and "nbf", when present, is not in
//     the future, both with Config.Leeway (30 s by default) for clock
//     skew;
//   - "sub" is a non-empty string.
//
// What it yields is the SDK's auth.TokenInfo: UserID the subject, Scopes
// the "scope" claim (or an "scp" array), Extra["iss"] the issuer and
// Extra["groups"] the claim Config.GroupsClaim names. The gate's MCP
// guard (gatemcp.DefaultPrincipal) reads them as the call's
// toolgate.Principal; a host that charges each principal to its
// Principal.Key gives each one budget, whatever MCP session it uses.
//
// A refused token is answered 401 with only the standard challenge; the
// reason (an *Error) goes to the Verifier's logger at debug level, never
// to the client.
//
// # Keys
//
// ParseJWKS is strict: a set with a private or symmetric key, an RSA key
// under 2048 bits, an EC key off its curve, an "alg" that its key type
// does not imply, a repeated kid or an unknown key type is an error as a
// whole, found when the set is loaded (a command exits on it at start).
// LoadFile reads a fixed set; RemoteKeys fetches one from the issuer's
// jwks_uri, again every few minutes and when a token names a kid it
// does not hold (a rotated key) — never more often than its minimum
// interval, so made-up kids cannot make the resource flood its issuer —
// and keeps its keys when a refresh fails.
//
// # The HTTP side
//
// Protect serves the RFC 9728 metadata document at WellKnownPath and
// guards everything else with the SDK's auth.RequireBearerToken, adding
// the 403 insufficient_scope answer for a token without a required
// scope.
//
// # Why golang-jwt
//
// The JWT library is github.com/golang-jwt/jwt/v5, kept in this nested
// module. Its Parser takes, as options, everything this package checks —
// an allow-list of algorithms, the issuer, the audience, a required
// expiration and a leeway — and its key function sees the parsed header,
// where the key is chosen and its algorithm pinned; it refuses "none"
// unless asked not to. go-jose v4 would also parse JWKS, but JWKS
// parsing here is deliberately narrower than a general JOSE library's
// (three key types, public, signing only), and is a hundred lines of the
// standard library, so the smaller dependency was chosen.
package bearer
