package contracts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// IDForm is the form of a canonical artifact id.
type IDForm int

// Canonical id forms. FormSpan is a bare Phoenix span id, which is what the
// ref of a SPAN or MESSAGE EvidenceRef is.
const (
	FormSpan IDForm = iota + 1
	FormTool
	FormRetrieval
	FormConfigDiff
	FormCompliance
)

func (f IDForm) String() string {
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
	return "IDForm(" + strconv.Itoa(int(f)) + ")"
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
	Form       IDForm
	SpanID     string
	Position   uint64
	DocumentID string
	ChunkID    string
	ControlID  string
	SHA256     string
}

// IDError reports why a string is not a canonical id. It wraps ErrBadID.
type IDError struct {
	ID     string
	Reason string
}

func (e *IDError) Error() string {
	return fmt.Sprintf("contracts: bad canonical id %q: %s", e.ID, e.Reason)
}

func (e *IDError) Unwrap() error { return ErrBadID }

const chunkMarker = ":chunk="

// ParseID parses any canonical id, including a bare span id. The grammar is
// unambiguous: span ids contain no ':'; a retrieval document id runs up to
// the first ":chunk=" (so it may contain ':' but not ":chunk="); a compliance
// control id runs up to the last ':' (the digest has none). No component may
// be empty or contain control characters or invalid UTF-8; a document
// position is a non-negative decimal integer without leading zeros.
func ParseID(s string) (ID, error) {
	bad := func(reason string) (ID, error) { return ID{}, &IDError{ID: s, Reason: reason} }
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

// String formats the id in its canonical form. For an ID returned by ParseID,
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

// ToolID returns "tool:<span_id>" after checking the span id.
func ToolID(spanID string) (string, error) {
	return buildID(ID{Form: FormTool, SpanID: spanID})
}

// RetrievalID returns "retrieval:<span_id>:<position>:<document_id>" with
// ":chunk=<chunk_id>" appended when chunkID is not empty.
func RetrievalID(spanID string, position uint64, documentID, chunkID string) (string, error) {
	if strings.Contains(documentID, chunkMarker) {
		return "", &IDError{ID: documentID, Reason: "a document id may not contain \":chunk=\""}
	}
	return buildID(ID{Form: FormRetrieval, SpanID: spanID, Position: position, DocumentID: documentID, ChunkID: chunkID})
}

// ConfigDiffID returns "configdiff:<sha256>" for a hex digest.
func ConfigDiffID(sha string) (string, error) {
	return buildID(ID{Form: FormConfigDiff, SHA256: sha})
}

// ComplianceID returns "compliance:<control_id>:<sha256>".
func ComplianceID(controlID, sha string) (string, error) {
	return buildID(ID{Form: FormCompliance, ControlID: controlID, SHA256: sha})
}

// buildID formats id and accepts the result only if it parses back to id.
func buildID(id ID) (string, error) {
	s := id.String()
	got, err := ParseID(s)
	if err != nil {
		return "", err
	}
	if got != id {
		return "", &IDError{ID: s, Reason: "parts do not round-trip"}
	}
	return s, nil
}

// ExcerptHash returns the SHA-256 of the excerpt's UTF-8 bytes as 64
// lower-case hex digits: the value of EvidenceRef.excerpt_hash.
func ExcerptHash(excerpt string) string {
	sum := sha256.Sum256([]byte(excerpt))
	return hex.EncodeToString(sum[:])
}

// formForKind is the id form an EvidenceRef of the given kind must carry.
func formForKind(k EvidenceKind) (IDForm, bool) {
	switch k {
	case EvidenceSpan, EvidenceMessage:
		return FormSpan, true
	case EvidenceToolIO:
		return FormTool, true
	case EvidenceRetrievalChunk:
		return FormRetrieval, true
	case EvidenceConfigDiff:
		return FormConfigDiff, true
	}
	return 0, false
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
