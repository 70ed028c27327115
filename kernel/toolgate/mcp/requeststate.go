package mcp

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate"
)

// This file is the Guard's own multi round-trip state (SEP-2322, MCP
// 2026-07-28 "Multi Round-Trip Requests"): the requestState of the
// input-required result by which the Guard asks a human to approve a
// call, and the checks a retry that echoes it back must pass. The
// specification's server requirements, which it follows:
//
//	"If a client request contains a requestState field, servers MUST
//	treat requestState as an attacker-controlled input. If requestState
//	influences authorization, resource access, or business logic,
//	servers MUST protect its integrity (e.g. HMAC or AEAD) and MUST
//	reject state that fails verification."
//
//	"To prevent replay, servers SHOULD include the following inside the
//	integrity-protected requestState payload and verify each on receipt:
//	the authenticated principal, …; a short expiry (TTL), …; an
//	identifier for the originating request, e.g. the method name and a
//	digest of its salient parameters, …" — "these measures … do not by
//	themselves guarantee single-use. Servers for which a given
//	requestState must be consumed at most once … MUST enforce that
//	invariant server-side."
//
// An approval is consumed at most once, so the Guard keeps the ids of
// the states it has accepted until they expire (stateSealer.redeem).
//
// Verity's state and an upstream's never mix. Verity's begins with
// statePrefix ("vg2."; "vg1.", the HMAC-only format before it, is
// recognised and refused); a retry whose state does not is the
// upstream's — relayed unchanged, never opened — and a retry whose state
// does is Verity's — opened, never forwarded. An upstream's
// input-required result that would blur the line (a requestState with
// Verity's prefix, or an input request under InputKey) is refused
// (upstreamMixes), so the two sets stay disjoint.

// statePrefix begins every request state this package issues.
const statePrefix = "vg2."

// legacyStatePrefix began the request states of the HMAC-only format
// this package issued before; such a state is Verity's and is refused.
const legacyStatePrefix = "vg1."

// DefaultStateTTL is how long a request state the Guard issues may be
// echoed back when Options.StateTTL is zero and the policy has no
// approval_ttl (Policy.ApprovalTTL, which bounds it otherwise).
const DefaultStateTTL = 15 * time.Minute

// maxUsedStates bounds the states a Guard remembers as used until they
// expire. A retry that would need one more is refused (fail closed)
// until some expire; at the default TTL that is over 70 approvals a
// second, sustained.
const maxUsedStates = 1 << 16

// stateNonceLen is the AES-GCM nonce length (random per state).
const stateNonceLen = 12

// isVerityState reports whether a retry's requestState is one this
// package issued (or claims to be): the Guard opens it, never forwards it.
func isVerityState(s string) bool {
	return strings.HasPrefix(s, statePrefix) || strings.HasPrefix(s, legacyStatePrefix)
}

// sealedState is what a Guard's requestState carries, sealed: which call
// is waiting for which approval, for whom and until when. The
// principal's key, the caller key and the tool are held as their
// SHA-256 (the caller key may be long: a custom Options.Caller); ID is
// the state's own random id, which a retry consumes.
type sealedState struct {
	Principal string `json:"p"`
	Caller    string `json:"c"`
	CallID    string `json:"i"`
	Approval  string `json:"a"`
	Tool      string `json:"t"`
	Digest    string `json:"d"`
	Expires   int64  `json:"x"` // Unix milliseconds
	ID        string `json:"n"`
}

// newSealedState is the state of call c waiting on approval request
// approvalID, valid until expires.
func newSealedState(c toolgate.Call, approvalID string, expires time.Time) sealedState {
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	return sealedState{Principal: sha256Hex(c.Principal.Key()), Caller: sha256Hex(c.Caller), CallID: c.ID, Approval: approvalID,
		Tool: sha256Hex(c.Tool), Digest: c.ArgumentsDigest(), Expires: expires.UnixMilli(), ID: hex.EncodeToString(id[:])}
}

// bindsTo returns nil when the state was issued for a call of c's
// principal, caller, tool and arguments, and says which differs
// otherwise.
func (s sealedState) bindsTo(c toolgate.Call) error {
	switch {
	case s.Principal != sha256Hex(c.Principal.Key()):
		return fmt.Errorf("%w: it was issued to another principal", ErrRequestState)
	case s.Caller != sha256Hex(c.Caller) || s.Tool != sha256Hex(c.Tool) || s.Digest != c.ArgumentsDigest():
		return fmt.Errorf("%w: it was issued for another call", ErrRequestState)
	}
	return nil
}

// stateSealer seals and opens a Guard's request states (AES-256-GCM
// under a key derived from Options.StateKey) and remembers the ones
// redeemed until they expire.
type stateSealer struct {
	aead cipher.AEAD
	ttl  time.Duration

	mu   sync.Mutex
	used map[string]time.Time // state id → its expiry
	max  int
}

// newStateSealer derives the AEAD key from key: SHA-256 over a label
// and key, so that a key file shared with other uses never serves two.
func newStateSealer(key []byte, ttl time.Duration) (*stateSealer, error) {
	h := sha256.New()
	h.Write([]byte("verity-go toolgate/mcp request state v2\x00"))
	h.Write(key)
	block, err := aes.NewCipher(h.Sum(nil))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &stateSealer{aead: aead, ttl: ttl, used: map[string]time.Time{}, max: maxUsedStates}, nil
}

// seal returns statePrefix + base64url(nonce ‖ AES-GCM(state's JSON)),
// with statePrefix as additional data. A state longer than maxStateLen,
// which open would refuse, is an error.
func (s *stateSealer) seal(st sealedState) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	buf := make([]byte, stateNonceLen, stateNonceLen+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(buf) // never fails (crypto/rand)
	sealed := s.aead.Seal(buf, buf[:stateNonceLen], plain, []byte(statePrefix))
	text := statePrefix + base64.RawURLEncoding.EncodeToString(sealed)
	if len(text) > maxStateLen {
		return "", fmt.Errorf("toolgate/mcp: request state of %d bytes, over the %d a retry may echo", len(text), maxStateLen)
	}
	return text, nil
}

// open checks and decrypts a state this sealer issued, at now: a state
// it did not issue, tampered with, of the format before, or expired, is
// ErrRequestState saying which. It does not consume the state (redeem).
func (s *stateSealer) open(text string, now time.Time) (sealedState, error) {
	if len(text) > maxStateLen {
		return sealedState{}, fmt.Errorf("%w: %d bytes, over %d", ErrRequestState, len(text), maxStateLen)
	}
	if strings.HasPrefix(text, legacyStatePrefix) {
		return sealedState{}, fmt.Errorf("%w: a %s state is no longer accepted; call again to be asked anew", ErrRequestState, strings.TrimSuffix(legacyStatePrefix, "."))
	}
	body, ok := strings.CutPrefix(text, statePrefix)
	if !ok {
		return sealedState{}, fmt.Errorf("%w: not a %s state", ErrRequestState, strings.TrimSuffix(statePrefix, "."))
	}
	if strings.ContainsAny(body, "\r\n") {
		// The decoder skips line breaks; a state is echoed as issued.
		return sealedState{}, fmt.Errorf("%w: not base64url: a line break", ErrRequestState)
	}
	sealed, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return sealedState{}, fmt.Errorf("%w: not base64url: %v", ErrRequestState, err)
	}
	if len(sealed) < stateNonceLen+s.aead.Overhead() {
		return sealedState{}, fmt.Errorf("%w: %d bytes sealed, too short", ErrRequestState, len(sealed))
	}
	plain, err := s.aead.Open(nil, sealed[:stateNonceLen], sealed[stateNonceLen:], []byte(statePrefix))
	if err != nil {
		return sealedState{}, fmt.Errorf("%w: not issued by this proxy, or altered", ErrRequestState)
	}
	var st sealedState
	d := json.NewDecoder(bytes.NewReader(plain))
	d.DisallowUnknownFields()
	if err := d.Decode(&st); err != nil || d.More() {
		// Sealed by this key, so written by this package: a key shared
		// with a program of another format, at worst.
		return sealedState{}, fmt.Errorf("%w: its payload does not decode", ErrRequestState)
	}
	if st.Principal == "" || st.Caller == "" || st.CallID == "" || st.Approval == "" || st.Tool == "" || st.Digest == "" || st.ID == "" || st.Expires == 0 {
		return sealedState{}, fmt.Errorf("%w: incomplete", ErrRequestState)
	}
	if exp := time.UnixMilli(st.Expires); !now.Before(exp) {
		return sealedState{}, fmt.Errorf("%w: it expired at %s", ErrRequestState, exp.UTC().Format(time.RFC3339))
	}
	return st, nil
}

// redeem consumes st at now: the first retry that brings it back uses
// it, any other is refused as a replay. Used ids are kept until their
// state expires (after which open refuses it anyway); when maxUsedStates
// unexpired ids are kept, the retry is refused rather than an id
// forgotten.
func (s *stateSealer) redeem(st sealedState, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, used := s.used[st.ID]; used {
		return fmt.Errorf("%w: it was used already (a replayed retry)", ErrRequestState)
	}
	if len(s.used) >= s.max {
		for id, exp := range s.used {
			if !now.Before(exp) {
				delete(s.used, id)
			}
		}
		if len(s.used) >= s.max {
			return fmt.Errorf("%w: %d approvals are in flight, the most this proxy keeps; retry once some expire", ErrRequestState, s.max)
		}
	}
	s.used[st.ID] = time.UnixMilli(st.Expires)
	return nil
}

// stateTTL is how long a state the Guard issues lives: Options.StateTTL,
// else DefaultStateTTL, never beyond the policy's approval_ttl (the
// approval request itself expires then).
func stateTTL(opt, approvalTTL time.Duration) time.Duration {
	ttl := opt
	if ttl <= 0 {
		ttl = DefaultStateTTL
	}
	if approvalTTL > 0 && approvalTTL < ttl {
		ttl = approvalTTL
	}
	return ttl
}

// retried is the Guard's path for a retry that echoes back one of its
// states: the state is opened, checked against the call and consumed,
// and the human's answer goes to the gate's Resume for exactly the call
// and the request it names. A state that fails — forged, tampered,
// expired, replayed, issued to another principal or for another call —
// runs nothing and changes no budget: the gate records the refused
// answer (a gatelog.KindRefuseAnswer entry), the Guard logs one line,
// and the client gets a JSON-RPC error, -32602 (invalid params): the
// specification's "MUST reject state that fails verification", as a
// protocol error ("Protocol errors … SHOULD return a JSON-RPC error
// response with an appropriate error code").
func (gd *Guard) retried(ctx context.Context, req *sdk.CallToolRequest, call toolgate.Call, run runFunc, log *slog.Logger) (sdk.Result, error) {
	p := req.Params
	var answer *sdk.ElicitResult
	if r, ok := p.InputResponses[InputKey].(*sdk.ElicitResult); ok {
		answer = r
	}
	now := time.Now()
	st, err := gd.states.open(p.RequestState, now)
	if err == nil {
		err = st.bindsTo(call)
	}
	if err == nil {
		err = gd.states.redeem(st, now)
	}
	if err != nil {
		log.Warn("refused retry", "err", err)
		a, _ := gd.answerOf(call, answer, nil)
		// Recorded as an answer to no question (gatelog.AnswerUnasked):
		// never to the request the state names, which may still wait —
		// a replay racing the first retry, or another principal's
		// answer to the same call, must not be the answer that counts.
		if _, rerr := gd.gate.Resume(context.WithoutCancel(ctx), call, "", a); rerr != nil {
			log.Error("recording the refused answer", "err", rerr)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool %q refused: %v", p.Name, err)}
	}
	call.ID = st.CallID
	return gd.settle(ctx, withoutApprovalInput(req), call, st.Approval, answer, nil, run, log)
}

// withoutVerityInput returns req without an input response under
// InputKey — the Guard's, which is never forwarded — keeping the
// upstream's request state and input responses as sent.
func withoutVerityInput(req *sdk.CallToolRequest) *sdk.CallToolRequest {
	if _, ok := req.Params.InputResponses[InputKey]; !ok {
		return req
	}
	state := req.Params.RequestState
	r := withoutApprovalInput(req)
	r.Params.RequestState = state
	return r
}

// upstreamMixes says why an upstream's result would mix its state with
// Verity's — an input-required result whose requestState begins with
// Verity's prefix, or that asks for input under InputKey — and "" when
// it does not. Such a result is refused, never relayed: a client would
// echo the state back to the Guard, or answer the upstream's question as
// though it were the Guard's.
func upstreamMixes(res sdk.Result) string {
	var state string
	var keys []string
	switch r := res.(type) {
	case *sdk.CallToolResult:
		if r == nil {
			return ""
		}
		state = r.RequestState
		for k := range r.InputRequests {
			keys = append(keys, k)
		}
	case *RawResult:
		if !bytes.Contains(r.JSON, []byte(`"requestState"`)) && !bytes.Contains(r.JSON, []byte(`"inputRequests"`)) {
			return ""
		}
		var w struct {
			RequestState  string                     `json:"requestState"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if json.Unmarshal(r.JSON, &w) != nil {
			return ""
		}
		state = w.RequestState
		for k := range w.InputRequests {
			keys = append(keys, k)
		}
	default:
		return ""
	}
	if isVerityState(state) {
		return fmt.Sprintf("its requestState begins with %q, which this proxy keeps for its own", state[:4])
	}
	for _, k := range keys {
		if k == InputKey {
			return fmt.Sprintf("it asks for input under %q, which this proxy keeps for its own", InputKey)
		}
	}
	return ""
}

// completeResult is an error CallToolResult with text, whose resultType
// is "complete": a result the proxy makes itself says what it is. The
// SDK keeps the field unexported (CallToolResult.resultType), sets it
// only for a tool handler's results, and reads it in UnmarshalJSON.
func completeResult(text string) *sdk.CallToolResult {
	wire, err := json.Marshal(struct {
		Content    []sdk.Content `json:"content"`
		IsError    bool          `json:"isError"`
		ResultType string        `json:"resultType"`
	}{[]sdk.Content{&sdk.TextContent{Text: text}}, true, "complete"})
	var r sdk.CallToolResult
	if err == nil {
		err = json.Unmarshal(wire, &r)
	}
	if err != nil {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
	}
	return &r
}

// ErrRequestState: the requestState a client echoed back with a retried
// call is not one this Guard issued, or not for this call, or no longer
// valid (expired, or used already).
var ErrRequestState = errors.New("toolgate/mcp: invalid request state")

// maxStateLen bounds the request state a client may echo back, and the
// state a Guard issues: the state binds the principal, the caller and
// the tool by their SHA-256, so it is a few hundred bytes whatever their
// length (the call and approval ids the gate makes are UUIDs).
const maxStateLen = 4096

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
