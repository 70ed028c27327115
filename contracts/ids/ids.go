// Package ids parses and builds the canonical artifact ids of
// specification 002 (Formal Contracts) and computes excerpt hashes.
//
//	id, err := ids.Parse("retrieval:b7ad6b7169203331:3:kb/returns-policy.md:chunk=12")
//	// id.Form == ids.FormRetrieval, id.SpanID == "b7ad6b7169203331", id.Position == 3, …
//	ref, err := ids.Tool("b7ad6b7169203331") // "tool:b7ad6b7169203331"
//
// The forms are tool:<span_id>,
// retrieval:<span_id>:<document_position>:<document_id>[:chunk=<chunk_id>],
// configdiff:<sha256> and compliance:<control_id>:<sha256>, plus a bare
// span id. A span id contains no ':'; a position is a decimal integer
// without sign or leading zero; a document id runs to the first ":chunk="
// (it may contain ':' — URLs do); a control id runs to the last ':';
// digests are 64 lower-case hex digits; no part is empty or holds control
// characters. Tool, Retrieval, ConfigDiff and Compliance build ids from
// their parts and refuse parts that would not parse back.
package ids

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Form is the form of a canonical artifact id.
type Form int

// Canonical id forms. FormSpan is a bare Phoenix span id, which is what the
// ref of a SPAN or MESSAGE EvidenceRef is.
const (
	FormSpan Form = iota + 1
	FormTool
	FormRetrieval
	FormConfigDiff
	FormCompliance
)

func (f Form) String() string {
	switch f {
	case FormSpan:
		return "span"
	case FormTool:
		return "tool"
	case FormRetrieval:
		return "retrieval"
	case FormConfigDiff:
		return "configdiff"
	case FormCompliance:
		return "compliance"
	}
	return "Form(" + strconv.Itoa(int(f)) + ")"
}

// ID is a parsed canonical id. Which fields are set depends on Form:
//
//	FormSpan        SpanID                      <span_id>
//	FormTool        SpanID                      tool:<span_id>
//	FormRetrieval   SpanID, Position,           retrieval:<span_id>:<document_position>:<document_id>[:chunk=<chunk_id>]
//	                DocumentID, ChunkID
//	FormConfigDiff  SHA256                      configdiff:<sha256>
//	FormCompliance  ControlID, SHA256           compliance:<control_id>:<sha256>
//
// ChunkID is empty when the retrieval id has no chunk part.
type ID struct {
	Form       Form
	SpanID     string
	Position   uint64
	DocumentID string
	ChunkID    string
	ControlID  string
	SHA256     string
}

// Error reports why a string is not a canonical id. It wraps ErrInvalid.
type Error struct {
	ID     string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("ids: bad canonical id %q: %s", e.ID, e.Reason)
}

func (e *Error) Unwrap() error { return ErrInvalid }

// ErrInvalid is wrapped by every *Error: a string is not a canonical id.
var ErrInvalid = errors.New("ids: bad canonical id")

const chunkMarker = ":chunk="

// Parse parses any canonical id, including a bare span id. The grammar is
// unambiguous: span ids contain no ':'; a retrieval document id runs up to
// the first ":chunk=" (so it may contain ':' but not ":chunk="); a compliance
// control id runs up to the last ':' (the digest has none). No component may
// be empty or contain control characters or invalid UTF-8; a document
// position is a non-negative decimal integer without leading zeros.
func Parse(s string) (ID, error) {
	bad := func(reason string) (ID, error) { return ID{}, &Error{ID: s, Reason: reason} }
	if s == "" {
		return bad("empty")
	}
	if !utf8.ValidString(s) {
		return bad("invalid UTF-8")
	}
	if strings.ContainsFunc(s, isControl) {
		return bad("control character")
	}
	prefix, rest, found := strings.Cut(s, ":")
	if !found {
		return ID{Form: FormSpan, SpanID: s}, nil
	}
	switch prefix {
	case "tool":
		if err := checkSpanID(rest); err != "" {
			return bad(err)
		}
		return ID{Form: FormTool, SpanID: rest}, nil
	case "retrieval":
		span, rest, ok := strings.Cut(rest, ":")
		if !ok {
			return bad("retrieval id needs <span_id>:<document_position>:<document_id>")
		}
		if err := checkSpanID(span); err != "" {
			return bad(err)
		}
		posText, rest, ok := strings.Cut(rest, ":")
		if !ok {
			return bad("retrieval id needs <document_position>:<document_id>")
		}
		pos, err := parsePosition(posText)
		if err != "" {
			return bad(err)
		}
		doc, chunk, hasChunk := strings.Cut(rest, chunkMarker)
		if doc == "" {
			return bad("empty document id")
		}
		if hasChunk && chunk == "" {
			return bad("empty chunk id")
		}
		return ID{Form: FormRetrieval, SpanID: span, Position: pos, DocumentID: doc, ChunkID: chunk}, nil
	case "configdiff":
		if !isSHA256(rest) {
			return bad("configdiff id needs 64 lower-case hex digits")
		}
		return ID{Form: FormConfigDiff, SHA256: rest}, nil
	case "compliance":
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return bad("compliance id needs <control_id>:<sha256>")
		}
		control, digest := rest[:i], rest[i+1:]
		if control == "" {
			return bad("empty control id")
		}
		if !isSHA256(digest) {
			return bad("compliance id needs 64 lower-case hex digits")
		}
		return ID{Form: FormCompliance, ControlID: control, SHA256: digest}, nil
	}
	return bad(fmt.Sprintf("unknown prefix %q (want tool, retrieval, configdiff or compliance)", prefix))
}

// String formats the id in its canonical form. For an ID returned by Parse,
// String returns the parsed text; Build* functions check their parts first.
func (id ID) String() string {
	switch id.Form {
	case FormSpan:
		return id.SpanID
	case FormTool:
		return "tool:" + id.SpanID
	case FormRetrieval:
		s := "retrieval:" + id.SpanID + ":" + strconv.FormatUint(id.Position, 10) + ":" + id.DocumentID
		if id.ChunkID != "" {
			s += chunkMarker + id.ChunkID
		}
		return s
	case FormConfigDiff:
		return "configdiff:" + id.SHA256
	case FormCompliance:
		return "compliance:" + id.ControlID + ":" + id.SHA256
	}
	return ""
}

// Tool returns "tool:<span_id>" after checking the span id.
func Tool(spanID string) (string, error) {
	return buildID(ID{Form: FormTool, SpanID: spanID})
}

// Retrieval returns "retrieval:<span_id>:<position>:<document_id>" with
// ":chunk=<chunk_id>" appended when chunkID is not empty.
func Retrieval(spanID string, position uint64, documentID, chunkID string) (string, error) {
	if strings.Contains(documentID, chunkMarker) {
		return "", &Error{ID: documentID, Reason: "a document id may not contain \":chunk=\""}
	}
	return buildID(ID{Form: FormRetrieval, SpanID: spanID, Position: position, DocumentID: documentID, ChunkID: chunkID})
}

// ConfigDiff returns "configdiff:<sha256>" for a hex digest.
func ConfigDiff(sha string) (string, error) {
	return buildID(ID{Form: FormConfigDiff, SHA256: sha})
}

// Compliance returns "compliance:<control_id>:<sha256>".
func Compliance(controlID, sha string) (string, error) {
	return buildID(ID{Form: FormCompliance, ControlID: controlID, SHA256: sha})
}

// buildID formats id and accepts the result only if it parses back to id.
func buildID(id ID) (string, error) {
	s := id.String()
	got, err := Parse(s)
	if err != nil {
		return "", err
	}
	if got != id {
		return "", &Error{ID: s, Reason: "parts do not round-trip"}
	}
	return s, nil
}

// ExcerptHash returns the SHA-256 of the excerpt's UTF-8 bytes as 64
// lower-case hex digits: the value of EvidenceRef.excerpt_hash.
func ExcerptHash(excerpt string) string {
	sum := sha256.Sum256([]byte(excerpt))
	return hex.EncodeToString(sum[:])
}

func checkSpanID(s string) string {
	switch {
	case s == "":
		return "empty span id"
	case strings.ContainsRune(s, ':'):
		return "a span id may not contain ':'"
	}
	return ""
}

func parsePosition(s string) (uint64, string) {
	if s == "" {
		return 0, "empty document position"
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, "document position has a leading zero"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, "document position is not a non-negative integer"
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, "document position out of range"
	}
	return n, ""
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }
