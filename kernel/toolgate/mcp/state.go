package mcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/verity-go/verity/kernel/toolgate"
)

// ErrRequestState: the requestState a client echoed back with a retried
// call is not one this Guard issued, or not for this call.
var ErrRequestState = errors.New("toolgate/mcp: invalid request state")

// maxStateLen bounds the request state a client may echo back, and the
// state a Guard issues: the state binds the caller and the tool by their
// SHA-256, so it is a few hundred bytes whatever their length (the call
// and approval ids the gate makes are UUIDs).
const maxStateLen = 4096

// stateVersion starts every request state this package issues.
const stateVersion = "vg1"

// approvalState is what an input-required result asks the client to echo
// back (CallToolResult.RequestState, SEP-2322): which call is waiting for
// which approval. The caller's and the tool's SHA-256 and the arguments
// digest bind it to the call, the MAC to this Guard.
type approvalState struct {
	Caller   string `json:"caller_sha256"`
	CallID   string `json:"call"`
	Approval string `json:"approval"`
	Tool     string `json:"tool_sha256"`
	Digest   string `json:"digest"`
}

// newApprovalState is the state of call c waiting on the approval request
// approvalID.
func newApprovalState(c toolgate.Call, approvalID string) approvalState {
	return approvalState{Caller: sha256Hex(c.Caller), CallID: c.ID, Approval: approvalID,
		Tool: sha256Hex(c.Tool), Digest: c.ArgumentsDigest()}
}

// binds reports whether the state was issued for a call of c's caller,
// tool and arguments.
func (s approvalState) binds(c toolgate.Call) bool {
	return s.Caller == sha256Hex(c.Caller) && s.Tool == sha256Hex(c.Tool) && s.Digest == c.ArgumentsDigest()
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// encodeState returns "vg1.PAYLOAD.MAC", PAYLOAD the state's JSON and MAC
// its HMAC-SHA256 under key, both base64url without padding. A state
// longer than maxStateLen, which decodeState would refuse, is an error.
func encodeState(key []byte, s approvalState) (string, error) {
	payload, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	text := stateVersion + "." + p + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, p))
	if len(text) > maxStateLen {
		return "", fmt.Errorf("toolgate/mcp: request state of %d bytes, over the %d a retry may echo", len(text), maxStateLen)
	}
	return text, nil
}

func stateMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateVersion + "." + payload))
	return m.Sum(nil)
}

// decodeState checks a request state's MAC under key and returns it. Any
// state this Guard did not issue is ErrRequestState.
func decodeState(key []byte, text string) (approvalState, error) {
	if len(text) > maxStateLen {
		return approvalState{}, fmt.Errorf("%w: %d bytes", ErrRequestState, len(text))
	}
	version, rest, ok := strings.Cut(text, ".")
	if !ok || version != stateVersion {
		return approvalState{}, fmt.Errorf("%w: not a %s state", ErrRequestState, stateVersion)
	}
	p, macText, ok := strings.Cut(rest, ".")
	if !ok {
		return approvalState{}, fmt.Errorf("%w: no MAC", ErrRequestState)
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(macText)
	if err != nil {
		return approvalState{}, fmt.Errorf("%w: MAC: %v", ErrRequestState, err)
	}
	if !hmac.Equal(mac, stateMAC(key, p)) {
		return approvalState{}, fmt.Errorf("%w: MAC mismatch", ErrRequestState)
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(p)
	if err != nil {
		return approvalState{}, fmt.Errorf("%w: payload: %v", ErrRequestState, err)
	}
	var s approvalState
	if err := json.Unmarshal(payload, &s); err != nil {
		return approvalState{}, fmt.Errorf("%w: payload: %v", ErrRequestState, err)
	}
	if s.Caller == "" || s.CallID == "" || s.Approval == "" || s.Tool == "" || s.Digest == "" {
		return approvalState{}, fmt.Errorf("%w: incomplete", ErrRequestState)
	}
	return s, nil
}
