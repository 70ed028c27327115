package trace

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Checkpoint is a log's head as a signed note carries it (the C2SP
// tlog-checkpoint text): the origin naming the log, its size, and the hash
// of its entry at Size-1. A log is a hash chain, not a Merkle tree, so the
// third line of the note is that entry's hash, not a tree root; a log
// "extends" a checkpoint when its entry at Size-1 has Hash (see
// VerifyAgainst). An empty log's checkpoint has Size 0 and the Genesis hash.
type Checkpoint struct {
	Origin string
	Size   uint64
	Hash   Hash
}

// Head returns the head the checkpoint names, to verify a log against.
func (c Checkpoint) Head() Head { return Head{Size: c.Size, Hash: c.Hash} }

// Limits of a checkpoint note.
const (
	// MaxCheckpointBytes bounds a signed checkpoint; larger input is refused
	// before it is parsed.
	MaxCheckpointBytes = 64 << 10
	// MaxCheckpointSignatures bounds the signature lines of one note (as
	// golang.org/x/mod/sumdb/note does).
	MaxCheckpointSignatures = 100
	maxKeyNameLen           = 256
	algEd25519              = 0x01
)

// Checkpoint errors. Concrete errors wrap them; test with errors.Is.
var (
	// ErrCheckpointMalformed: a note, key or key file that is not in the
	// format.
	ErrCheckpointMalformed = errors.New("trace: malformed checkpoint")
	// ErrCheckpointSignature: the note carries no signature by the
	// verifier's key, or the one it carries does not verify.
	ErrCheckpointSignature = errors.New("trace: checkpoint signature does not verify")
	// ErrCheckpointOrigin: a correctly signed checkpoint of another log.
	ErrCheckpointOrigin = errors.New("trace: checkpoint is for another origin")
	// ErrKeyMalformed: a signer or verifier key (or key file) that cannot
	// be read.
	ErrKeyMalformed = errors.New("trace: malformed key")
)

// validKeyName reports whether name may be a key name or an origin: not
// empty, at most 256 bytes of UTF-8 with no Unicode space and no '+' (the
// rule of golang.org/x/mod/sumdb/note for key names, and the
// recommendation of tlog-checkpoint for origins, here a requirement).
func validKeyName(name string) bool {
	return name != "" && len(name) <= maxKeyNameLen && utf8.ValidString(name) &&
		strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) < 0 &&
		!strings.Contains(name, "+")
}

// keyHash is the key id of a signed note: the first four bytes, big
// endian, of SHA-256(name || 0x0A || key), where key is the algorithm byte
// followed by the public key.
func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n'})
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// CheckpointSigner signs checkpoints with an Ed25519 private key under a
// key name.
type CheckpointSigner struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
}

// CheckpointVerifier checks checkpoint signatures by one Ed25519 public
// key under a key name.
type CheckpointVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

// Name returns the key name.
func (s *CheckpointSigner) Name() string { return s.name }

// KeyHash returns the key id carried in signature lines.
func (s *CheckpointSigner) KeyHash() uint32 { return s.hash }

// Verifier returns the verifier of this signer's signatures.
func (s *CheckpointSigner) Verifier() *CheckpointVerifier {
	return &CheckpointVerifier{name: s.name, hash: s.hash, key: s.key.Public().(ed25519.PublicKey)}
}

// Name returns the key name.
func (v *CheckpointVerifier) Name() string { return v.name }

// KeyHash returns the key id carried in signature lines.
func (v *CheckpointVerifier) KeyHash() uint32 { return v.hash }

// String returns the verifier key in the form ParseVerifierKey reads:
// NAME+HASH+BASE64(0x01 || public key).
func (v *CheckpointVerifier) String() string {
	return fmt.Sprintf("%s+%08x+%s", v.name, v.hash, base64.StdEncoding.EncodeToString(append([]byte{algEd25519}, v.key...)))
}

// String returns the signer key in the form ParseSignerKey reads:
// PRIVATE+KEY+NAME+HASH+BASE64(0x01 || seed). It is the secret.
func (s *CheckpointSigner) String() string {
	return fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", s.name, s.hash, base64.StdEncoding.EncodeToString(append([]byte{algEd25519}, s.key.Seed()...)))
}

// GenerateCheckpointKey makes a new Ed25519 key named name from rand (nil:
// crypto/rand) and returns its signer and verifier keys in the text forms
// of golang.org/x/mod/sumdb/note (see ParseSignerKey and
// ParseVerifierKey).
func GenerateCheckpointKey(rand io.Reader, name string) (signerKey, verifierKey string, err error) {
	if !validKeyName(name) {
		return "", "", fmt.Errorf("%w: key name %q: want 1 to %d bytes of UTF-8 without spaces or '+'", ErrKeyMalformed, name, maxKeyNameLen)
	}
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return "", "", err
	}
	s := newSigner(name, priv)
	return s.String(), s.Verifier().String(), nil
}

func newSigner(name string, priv ed25519.PrivateKey) *CheckpointSigner {
	pub := append([]byte{algEd25519}, priv.Public().(ed25519.PublicKey)...)
	return &CheckpointSigner{name: name, hash: keyHash(name, pub), key: priv}
}

// decodeCanonical decodes standard, padded base64 and refuses any text
// that is not the canonical encoding of what it decodes to (other
// padding bits, line breaks), so one value has one text.
func decodeCanonical(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// parseKeyHash reads the 8 lower-case hex digits of a key id.
func parseKeyHash(s string) (uint32, bool) {
	if len(s) != 8 || strings.ToLower(s) != s {
		return 0, false
	}
	h, err := strconv.ParseUint(s, 16, 32)
	return uint32(h), err == nil
}

// ParseVerifierKey reads a verifier key, NAME+HASH+BASE64(0x01 || public
// key) as golang.org/x/mod/sumdb/note writes it: HASH is the key id in 8
// lower-case hex digits and must match NAME and the key.
func ParseVerifierKey(s string) (*CheckpointVerifier, error) {
	if strings.HasPrefix(s, "PRIVATE+KEY+") {
		return nil, fmt.Errorf("%w: this is a private (signer) key; a verifier key is NAME+HASH+KEY", ErrKeyMalformed)
	}
	parts := strings.SplitN(s, "+", 3) // base64 may hold '+'; a name may not
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: a verifier key is NAME+HASH+KEY (three fields separated by '+')", ErrKeyMalformed)
	}
	name, hash, key, err := parseKeyFields(parts[0], parts[1], parts[2], ed25519.PublicKeySize)
	if err != nil {
		return nil, err
	}
	if hash != keyHash(name, key) {
		return nil, fmt.Errorf("%w: key id %08x does not match the name and key (want %08x)", ErrKeyMalformed, hash, keyHash(name, key))
	}
	return &CheckpointVerifier{name: name, hash: hash, key: ed25519.PublicKey(key[1:])}, nil
}

// ParseSignerKey reads a signer key, PRIVATE+KEY+NAME+HASH+BASE64(0x01 ||
// Ed25519 seed) as golang.org/x/mod/sumdb/note writes it: HASH is the key
// id of the matching verifier key.
func ParseSignerKey(s string) (*CheckpointSigner, error) {
	rest, ok := strings.CutPrefix(s, "PRIVATE+KEY+")
	if !ok {
		if _, err := ParseVerifierKey(s); err == nil {
			return nil, fmt.Errorf("%w: this is a verifier (public) key; a signer key is PRIVATE+KEY+NAME+HASH+KEY", ErrKeyMalformed)
		}
		return nil, fmt.Errorf("%w: a signer key begins with PRIVATE+KEY+", ErrKeyMalformed)
	}
	parts := strings.SplitN(rest, "+", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: a signer key is PRIVATE+KEY+NAME+HASH+KEY", ErrKeyMalformed)
	}
	name, hash, seed, err := parseKeyFields(parts[0], parts[1], parts[2], ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	s2 := newSigner(name, ed25519.NewKeyFromSeed(seed[1:]))
	if hash != s2.hash {
		return nil, fmt.Errorf("%w: key id %08x does not match the name and key (want %08x)", ErrKeyMalformed, hash, s2.hash)
	}
	return s2, nil
}

// parseKeyFields checks the NAME, HASH and KEY fields of a key; key keeps
// its algorithm byte.
func parseKeyFields(name, hash16, key64 string, keyLen int) (string, uint32, []byte, error) {
	if !validKeyName(name) {
		return "", 0, nil, fmt.Errorf("%w: key name %q: want 1 to %d bytes of UTF-8 without spaces or '+'", ErrKeyMalformed, name, maxKeyNameLen)
	}
	hash, ok := parseKeyHash(hash16)
	if !ok {
		return "", 0, nil, fmt.Errorf("%w: key id %q: want 8 lower-case hex digits", ErrKeyMalformed, hash16)
	}
	key, ok := decodeCanonical(key64)
	if !ok {
		return "", 0, nil, fmt.Errorf("%w: the key is not canonical standard base64", ErrKeyMalformed)
	}
	if len(key) == 0 || key[0] != algEd25519 {
		return "", 0, nil, fmt.Errorf("%w: unknown key algorithm (only Ed25519, 0x01, is known)", ErrKeyMalformed)
	}
	if len(key) != 1+keyLen {
		return "", 0, nil, fmt.Errorf("%w: an Ed25519 key is %d bytes, got %d", ErrKeyMalformed, keyLen, len(key)-1)
	}
	return name, hash, key, nil
}

// Text returns the checkpoint's note text: the origin, the size in
// decimal and the hash in standard base64, each followed by a newline.
func (c Checkpoint) Text() []byte {
	b := make([]byte, 0, len(c.Origin)+66)
	b = append(b, c.Origin...)
	b = append(b, '\n')
	b = strconv.AppendUint(b, c.Size, 10)
	b = append(b, '\n')
	b = base64.StdEncoding.AppendEncode(b, c.Hash[:])
	return append(b, '\n')
}

// check applies the rules of a checkpoint's fields.
func (c Checkpoint) check() error {
	if !validKeyName(c.Origin) {
		return fmt.Errorf("%w: origin %q: want 1 to %d bytes of UTF-8 without spaces or '+'", ErrCheckpointMalformed, c.Origin, maxKeyNameLen)
	}
	if c.Size == 0 && c.Hash != Genesis {
		return fmt.Errorf("%w: an empty log's hash is the genesis hash (zero bytes)", ErrCheckpointMalformed)
	}
	return nil
}

// Sign returns the signed note of c: its text, a blank line, and one
// signature line "— NAME BASE64(key id || Ed25519 signature of the text)".
func (s *CheckpointSigner) Sign(c Checkpoint) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	text := c.Text()
	sig := make([]byte, 4, 4+ed25519.SignatureSize)
	binary.BigEndian.PutUint32(sig, s.hash)
	sig = append(sig, ed25519.Sign(s.key, text)...)
	out := make([]byte, 0, len(text)+len(s.name)+100)
	out = append(out, text...)
	out = append(out, "\n— "...)
	out = append(out, s.name...)
	out = append(out, ' ')
	out = base64.StdEncoding.AppendEncode(out, sig)
	return append(out, '\n'), nil
}

// NoteSignature is one signature line of a note: the key's name, its key
// id, and the signature bytes after the id.
type NoteSignature struct {
	Name    string
	KeyHash uint32
	Sig     []byte
}

// SignedCheckpoint is a parsed, not yet verified, signed checkpoint.
type SignedCheckpoint struct {
	Checkpoint
	Signatures []NoteSignature
}

// ParseCheckpoint reads a signed checkpoint without checking its
// signatures (Verify does). It is strict: at most MaxCheckpointBytes of
// UTF-8 with no control character but newline; exactly three text lines —
// an origin (a key name's rules), the size in decimal without leading
// zeros, the hash as canonical standard base64 of 32 bytes (zero for size
// 0) — and no extension lines; a blank line; then 1 to
// MaxCheckpointSignatures lines "— NAME BASE64", each with a key name and
// at least a key id and one signature byte, the last ending in a newline.
// Anything else is an error wrapping ErrCheckpointMalformed.
func ParseCheckpoint(note []byte) (SignedCheckpoint, error) {
	var sc SignedCheckpoint
	bad := func(format string, args ...any) (SignedCheckpoint, error) {
		return SignedCheckpoint{}, fmt.Errorf("%w: "+format, append([]any{ErrCheckpointMalformed}, args...)...)
	}
	if len(note) > MaxCheckpointBytes {
		return bad("%d bytes, more than %d", len(note), MaxCheckpointBytes)
	}
	for i := 0; i < len(note); {
		r, size := utf8.DecodeRune(note[i:])
		if r == utf8.RuneError && size == 1 {
			return bad("not UTF-8 at byte %d", i)
		}
		if r < 0x20 && r != '\n' || r == 0x7f {
			return bad("control character %U at byte %d", r, i)
		}
		i += size
	}
	split := bytes.Index(note, []byte("\n\n"))
	if split < 0 {
		return bad("no blank line between the text and the signatures")
	}
	text, sigs := note[:split+1], note[split+2:]
	lines := strings.Split(string(text[:len(text)-1]), "\n")
	if len(lines) != 3 {
		return bad("the text has %d lines, want 3 (origin, size, hash; no extension lines)", len(lines))
	}
	sc.Origin = lines[0]
	sizeText := lines[1]
	if sizeText == "" || len(sizeText) > 1 && sizeText[0] == '0' || strings.TrimLeft(sizeText, "0123456789") != "" {
		return bad("size %q: want a decimal number without leading zeros", sizeText)
	}
	size, err := strconv.ParseUint(sizeText, 10, 64)
	if err != nil {
		return bad("size %q out of range", sizeText)
	}
	sc.Size = size
	hash, ok := decodeCanonical(lines[2])
	if !ok || len(hash) != len(sc.Hash) {
		return bad("hash: want the canonical standard base64 of 32 bytes")
	}
	copy(sc.Hash[:], hash)
	if err := sc.Checkpoint.check(); err != nil {
		return SignedCheckpoint{}, err
	}
	if len(sigs) == 0 || sigs[len(sigs)-1] != '\n' {
		return bad("the signatures must end with a newline")
	}
	for n := 0; len(sigs) > 0; n++ {
		if n == MaxCheckpointSignatures {
			return bad("more than %d signatures", MaxCheckpointSignatures)
		}
		i := bytes.IndexByte(sigs, '\n')
		line := string(sigs[:i])
		sigs = sigs[i+1:]
		rest, ok := strings.CutPrefix(line, "— ")
		if !ok {
			return bad("signature line %d does not begin with \"— \"", n+1)
		}
		name, b64, ok := strings.Cut(rest, " ")
		if !ok || !validKeyName(name) {
			return bad("signature line %d: want \"— NAME BASE64\" with a key name", n+1)
		}
		raw, ok := decodeCanonical(b64)
		if !ok || len(raw) < 5 {
			return bad("signature line %d: want canonical standard base64 of a key id and a signature", n+1)
		}
		sc.Signatures = append(sc.Signatures, NoteSignature{Name: name, KeyHash: binary.BigEndian.Uint32(raw), Sig: raw[4:]})
	}
	return sc, nil
}

// Verify parses a signed checkpoint and checks it: v's signature over its
// text must be there and verify (signatures by other keys are ignored, as
// the signed-note specification requires, so a witness may cosign), and
// its origin must be origin ("" stands for v's key name, the origin a log
// signing under its own name uses). A malformed note wraps
// ErrCheckpointMalformed; a missing or failing signature,
// ErrCheckpointSignature; another origin, ErrCheckpointOrigin.
func (v *CheckpointVerifier) Verify(note []byte, origin string) (Checkpoint, error) {
	sc, err := ParseCheckpoint(note)
	if err != nil {
		return Checkpoint{}, err
	}
	text := sc.Text()
	found := false
	for _, s := range sc.Signatures {
		if s.Name != v.name || s.KeyHash != v.hash {
			continue
		}
		if len(s.Sig) != ed25519.SignatureSize || !ed25519.Verify(v.key, text, s.Sig) {
			return Checkpoint{}, fmt.Errorf("%w: the signature by %s+%08x is not a signature of this text", ErrCheckpointSignature, v.name, v.hash)
		}
		found = true
	}
	if !found {
		return Checkpoint{}, fmt.Errorf("%w: no signature by key %s+%08x", ErrCheckpointSignature, v.name, v.hash)
	}
	if origin == "" {
		origin = v.name
	}
	if sc.Origin != origin {
		return Checkpoint{}, fmt.Errorf("%w: the checkpoint is for %q, want %q", ErrCheckpointOrigin, sc.Origin, origin)
	}
	return sc.Checkpoint, nil
}
