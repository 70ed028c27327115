package trace

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/canon"
)

// Hash is a SHA-256 digest.
type Hash [32]byte

// Genesis is the previous-hash of the first entry of every log: 32 zero bytes.
var Genesis Hash

// String returns the hash in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the genesis hash.
func (h Hash) IsZero() bool { return h == Genesis }

// MarshalText encodes the hash as lower-case hex.
func (h Hash) MarshalText() ([]byte, error) {
	out := make([]byte, 64)
	hex.Encode(out, h[:])
	return out, nil
}

// UnmarshalText decodes 64 lower-case hex digits.
func (h *Hash) UnmarshalText(b []byte) error {
	parsed, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = parsed
	return nil
}

// ParseHash decodes 64 lower-case hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 64 {
		return h, fmt.Errorf("%w: hash must be 64 hex digits, got %d characters", ErrMalformed, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return h, fmt.Errorf("%w: hash must be lower-case hex", ErrMalformed)
		}
	}
	_, _ = hex.Decode(h[:], []byte(s))
	return h, nil
}

// Entry is one record of a log. Every field is covered by Hash.
type Entry struct {
	Seq     uint64    // position in the log, from 0
	Prev    Hash      // Hash of entry Seq-1, or Genesis for entry 0
	Kind    string    // short dotted name such as "kernel.execute"
	Payload []byte    // canonical JSON (RFC 8785)
	Time    time.Time // UTC, nanosecond precision
	Hash    Hash      // EntryHash of the fields above
}

// Head identifies the state of a log: how many entries it has and the hash
// of the last one (Genesis when empty). Keeping a Head outside the log and
// verifying against it detects truncation as well as tampering.
//
// Written as text (String, ParseHead, and the verity command's head and
// verify --head) a head is SEQ:HASH: the sequence number of the last
// entry, which is Size-1, and its hash. The number is a sequence number,
// not a size: the head of a log of 15 entries is 14:<hash of entry 14>.
// In JSON a Head has both members by name, {"size":15,"hash":"…"}.
type Head struct {
	Size uint64 `json:"size"`
	Hash Hash   `json:"hash"`
}

// emptyHead is the text form of the head of an empty log, which has no
// last entry to name.
const emptyHead = "empty"

// String writes h as SEQ:HASH — the last entry's sequence number (Size-1)
// in decimal and its hash in lower-case hex — the form the verity command
// prints and its --head flag reads; ParseHead reads it back. The head of
// an empty log is "empty".
func (h Head) String() string {
	if h.Size == 0 {
		return emptyHead
	}
	return strconv.FormatUint(h.Size-1, 10) + ":" + h.Hash.String()
}

// ParseHead reads a head written by Head.String: SEQ:HASH, the sequence
// number of the last entry (decimal, no sign, no leading zero) and its
// hash (64 lower-case hex digits), giving the Head of a log of SEQ+1
// entries; or "empty". Anything else is an error wrapping ErrMalformed
// that says what was wrong.
func ParseHead(s string) (Head, error) {
	if s == emptyHead {
		return Head{}, nil
	}
	seqText, hashText, ok := strings.Cut(s, ":")
	if !ok {
		return Head{}, fmt.Errorf("%w: head %q: want SEQ:HASH, the last entry's sequence number and hash", ErrMalformed, s)
	}
	if seqText == "" || len(seqText) > 1 && seqText[0] == '0' || strings.TrimLeft(seqText, "0123456789") != "" {
		return Head{}, fmt.Errorf("%w: head %q: SEQ must be a decimal sequence number without sign or leading zero", ErrMalformed, s)
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil || seq == math.MaxUint64 {
		return Head{}, fmt.Errorf("%w: head %q: SEQ out of range", ErrMalformed, s)
	}
	h, err := ParseHash(hashText)
	if err != nil {
		return Head{}, fmt.Errorf("%w: head %q: %s", ErrMalformed, s, strings.TrimPrefix(err.Error(), ErrMalformed.Error()+": "))
	}
	return Head{Size: seq + 1, Hash: h}, nil
}

// Limits on entry fields.
const (
	MaxKindLen    = 128
	MaxPayloadLen = 16 << 20
	timeLen       = len("2006-01-02T15:04:05.000000000Z")
	entryTag      = 0x00 // domain separation: an entry hash
)

// Sentinel errors. Concrete errors wrap them; test with errors.Is.
var (
	ErrMalformed  = errors.New("trace: malformed entry")
	ErrChainBreak = errors.New("trace: hash chain broken")
	ErrTruncated  = errors.New("trace: log is shorter than the trusted head")
	ErrTornTail   = errors.New("trace: torn final record")
	ErrCorrupt    = errors.New("trace: corrupt record")
	ErrConflict   = errors.New("trace: head moved (concurrent writer)")
	ErrClosed     = errors.New("trace: store closed")
	ErrBroken     = errors.New("trace: store failed earlier and must be reopened")
	ErrNotLog     = errors.New("trace: not a trace log file")
	ErrReadOnly   = errors.New("trace: log file opened read-only")
	ErrLocked     = errors.New("trace: log file is open for writing elsewhere")
	ErrNotRegular = errors.New("trace: not a regular file")
)

// ChainBreakError reports the first entry that does not verify: its index,
// what was expected there and what was found.
type ChainBreakError struct {
	Index    uint64
	Field    string // "seq", "prev", "kind", "time", "payload" or "hash"
	Expected string
	Actual   string
	Head     Head // the head of the entries before Index, which verified
}

func (e *ChainBreakError) Error() string {
	return fmt.Sprintf("trace: hash chain broken at entry %d: %s is %s, expected %s", e.Index, e.Field, e.Actual, e.Expected)
}

func (e *ChainBreakError) Unwrap() error { return ErrChainBreak }

// TruncatedError reports a log with fewer entries than a trusted head, or
// whose entry at the head's position has another hash.
type TruncatedError struct {
	Want Head
	Got  Head
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("trace: log does not extend the trusted head %s (%d entries): the log has %d entries, head %s",
		e.Want, e.Want.Size, e.Got.Size, e.Got)
}

func (e *TruncatedError) Unwrap() error { return ErrTruncated }

// validKind reports whether kind is a short dotted name: 1 to 128 bytes of
// [a-z0-9_-], separated by single dots, not starting or ending with a dot.
func validKind[T string | []byte](kind T) error {
	if len(kind) == 0 || len(kind) > MaxKindLen {
		return fmt.Errorf("%w: kind must be 1 to %d bytes", ErrMalformed, MaxKindLen)
	}
	prevDot := true
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
			prevDot = false
		case c == '.' && !prevDot:
			prevDot = true
		default:
			return fmt.Errorf("%w: kind %q: only [a-z0-9_-] separated by single dots", ErrMalformed, kind)
		}
	}
	if prevDot {
		return fmt.Errorf("%w: kind %q ends with a dot", ErrMalformed, kind)
	}
	return nil
}

// ValidPayload reports whether p can be an entry's payload: RFC 8785
// canonical JSON (so never empty) of at most MaxPayloadLen bytes.
func ValidPayload(p []byte) error {
	if len(p) > MaxPayloadLen {
		return fmt.Errorf("%w: payload is %d bytes, limit %d", ErrMalformed, len(p), MaxPayloadLen)
	}
	if len(p) == 0 {
		return fmt.Errorf("%w: payload is empty, not JSON", ErrMalformed)
	}
	if err := canon.Valid(p); err != nil {
		return fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	return nil
}

// ValidFields reports whether e's own fields follow the rules of FORMAT.md
// §1: a kind of 1 to 128 bytes of [a-z0-9_-] in dot-separated words, a time
// in years 0000-9999, and a payload ValidPayload accepts. It does not look
// at the chain or the hash. Whatever passes can be written to a log file
// and read back; every Store refuses, with ErrMalformed, an append whose
// entries do not pass.
func ValidFields(e Entry) error {
	if err := validKind(e.Kind); err != nil {
		return err
	}
	if err := validTime(e.Time); err != nil {
		return err
	}
	return ValidPayload(e.Payload)
}

// The wire form has a four-digit year: entry times lie in [minTime, maxTime).
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

func validTime(t time.Time) error {
	if t.Before(minTime) || !t.Before(maxTime) {
		return fmt.Errorf("%w: time %v outside years 0000-9999", ErrMalformed, t)
	}
	return nil
}

// Normalize returns t as the log stores it: UTC, no monotonic reading.
func Normalize(t time.Time) time.Time { return t.Round(0).UTC() }

// Seconds since 1970 of minTime and maxTime.
const minUnix, maxUnix = -62167219200, 253402300800

// twoDigits holds "00" to "99".
const twoDigits = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendTime writes t (UTC) as YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ. A time in
// years 0000-9999 (every entry's) is written from its Unix seconds with
// the civil-from-days arithmetic of H. Hinnant's "chrono-compatible
// low-level date algorithms"; others as time.Time.Date breaks them down.
func appendTime(b []byte, t time.Time) []byte {
	sec := t.Unix()
	if sec < minUnix || sec >= maxUnix {
		return appendTimeSlow(b, t)
	}
	// Days and seconds since 0000-01-01; the days then counted from
	// -0400-03-01 (day 60 of year 0, a leap year, is 0000-03-01), so that
	// every quantity is non-negative and a year ends with February.
	since := uint64(sec - minUnix)
	daySec := since % 86400
	z := since/86400 - 60 + 146097
	era := z / 146097
	doe := z - era*146097                                  // day of the 400-year era
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of the era
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the year from March 1
	mp := (5*doy + 2) / 153                                // month from March, 0-11
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	y := yoe + era*400
	if m <= 2 {
		y++
	}
	y -= 400
	hh, mi, ss := daySec/3600, daySec/60%60, daySec%60
	ns := uint64(t.Nanosecond())
	var w [timeLen]byte
	put2 := func(i int, v uint64) { w[i], w[i+1] = twoDigits[2*v], twoDigits[2*v+1] }
	put2(0, y/100)
	put2(2, y%100)
	w[4] = '-'
	put2(5, m)
	w[7] = '-'
	put2(8, d)
	w[10] = 'T'
	put2(11, hh)
	w[13] = ':'
	put2(14, mi)
	w[16] = ':'
	put2(17, ss)
	w[19] = '.'
	w[20] = byte('0' + ns/100000000)
	ns %= 100000000
	put2(21, ns/1000000)
	put2(23, ns/10000%100)
	put2(25, ns/100%100)
	put2(27, ns%100)
	w[29] = 'Z'
	return append(b, w[:]...)
}

// appendTimeSlow is appendTime for any time.
func appendTimeSlow(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	ns := t.Nanosecond()
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	b = appendDigits(b, s, 2)
	b = append(b, '.')
	b = appendDigits(b, ns, 9)
	return append(b, 'Z')
}

func appendDigits(b []byte, v, width int) []byte {
	var tmp [9]byte
	for i := width - 1; i >= 0; i-- {
		tmp[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, tmp[:width]...)
}

// FormatTime returns the wire form of an entry time: RFC 3339, UTC, with
// exactly nine fractional digits (30 bytes).
func FormatTime(t time.Time) string { return string(appendTime(nil, t)) }

// ParseTime parses the wire form written by FormatTime and nothing else:
// YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ naming a real instant of the proleptic
// Gregorian calendar in UTC (a valid day of its month, hours 00-23,
// minutes and seconds 00-59: no leap second).
func ParseTime(s string) (time.Time, error) { return parseTime(s) }

// timeDigits are the positions of the wire form's digit runs: year, month,
// day, hour, minute, second, nanoseconds. Every other byte is punctuation,
// as in timeLayout.
var timeDigits = [...][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 29}}

const timeLayout = "0000-00-00T00:00:00.000000000Z"

func parseTime[T string | []byte](s T) (time.Time, error) {
	if len(s) != timeLen {
		return time.Time{}, fmt.Errorf("%w: time %q is not YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ", ErrMalformed, s)
	}
	for i := 0; i < timeLen; i++ {
		if c := s[i]; timeLayout[i] == '0' && (c < '0' || c > '9') || timeLayout[i] != '0' && c != timeLayout[i] {
			return time.Time{}, fmt.Errorf("%w: time %q is not YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ", ErrMalformed, s)
		}
	}
	var v [len(timeDigits)]int
	for i, r := range timeDigits {
		for j := r[0]; j < r[1]; j++ {
			v[i] = v[i]*10 + int(s[j]-'0')
		}
	}
	y, mo, d, h, mi, sec := v[0], v[1], v[2], v[3], v[4], v[5]
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, fmt.Errorf("%w: time %q is not a valid UTC date and time", ErrMalformed, s)
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, v[6], time.UTC), nil
}

// daysIn returns the number of days of month mo (1-12) of year y in the
// proleptic Gregorian calendar.
func daysIn(y, mo int) int {
	if mo == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		return 29
	}
	return [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[mo-1]
}

// appendPreimage writes the bytes an entry hash is taken over (see FORMAT.md):
//
//	0x00 | seq u64be | prev [32] | len(kind) u32be | kind | time [30] | len(payload) u32be | payload
func appendPreimage(b []byte, seq uint64, prev Hash, kind string, t time.Time, payload []byte) []byte {
	b = append(b, entryTag)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = append(b, prev[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(kind)))
	b = append(b, kind...)
	b = appendTime(b, t)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// EntryHash computes the hash of an entry's fields (everything but Hash).
func EntryHash(e Entry) Hash {
	const fixed = 1 + 8 + 32 + 4 + timeLen + 4
	switch n := fixed + len(e.Kind) + len(e.Payload); {
	case n <= 512: // the common case, with less stack to clear
		var buf [512]byte
		return Hash(sha256.Sum256(appendPreimage(buf[:0], e.Seq, e.Prev, e.Kind, e.Time, e.Payload)))
	case n <= 2048:
		var buf [2048]byte
		return Hash(sha256.Sum256(appendPreimage(buf[:0], e.Seq, e.Prev, e.Kind, e.Time, e.Payload)))
	}
	// Large payloads stream into the hash instead of being copied.
	var head [fixed + MaxKindLen]byte
	h := sha256.New()
	pre := appendPreimage(head[:0], e.Seq, e.Prev, e.Kind, e.Time, nil)
	h.Write(pre[:len(pre)-4])
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(e.Payload)))
	h.Write(n[:])
	h.Write(e.Payload)
	var out Hash
	h.Sum(out[:0])
	return out
}

// Next is the pure append step: given the current head, it builds the
// entry that continues the log and returns it with the new head. The
// payload must already be canonical JSON; Next copies it. It fails, changing
// nothing, on an invalid kind, a payload that is not canonical JSON or is
// longer than MaxPayloadLen, or a time outside years 0000-9999.
func Next(h Head, kind string, payload []byte, t time.Time) (Entry, Head, error) {
	if err := ValidPayload(payload); err != nil {
		return Entry{}, h, err
	}
	return next(h, kind, append([]byte(nil), payload...), t, nil)
}

// next builds an entry from an owned, canonical payload. pre, when not
// nil, is a buffer of the caller's (a Log's, under its lock) that the
// hash's preimage is written in, kept for the next entry: the hash then
// takes no stack buffer (EntryHash's are up to 2 KiB deep, on the
// deepest frame of a call through the tool gate, whose goroutine would
// grow its stack for it).
func next(h Head, kind string, payload []byte, t time.Time, pre *[]byte) (Entry, Head, error) {
	if err := validKind(kind); err != nil {
		return Entry{}, h, err
	}
	if len(payload) > MaxPayloadLen {
		return Entry{}, h, fmt.Errorf("%w: payload is %d bytes, limit %d", ErrMalformed, len(payload), MaxPayloadLen)
	}
	if err := validTime(t); err != nil {
		return Entry{}, h, err
	}
	e := Entry{Seq: h.Size, Prev: h.Hash, Kind: kind, Payload: payload, Time: Normalize(t)}
	if pre == nil {
		e.Hash = EntryHash(e)
	} else {
		b := appendPreimage((*pre)[:0], e.Seq, e.Prev, e.Kind, e.Time, e.Payload)
		e.Hash = Hash(sha256.Sum256(b))
		if cap(b) <= maxKeptPreimage {
			*pre = b[:0]
		}
	}
	return e, Head{Size: h.Size + 1, Hash: e.Hash}, nil
}

// maxKeptPreimage is the largest preimage buffer a Log keeps for the
// next append.
const maxKeptPreimage = 64 << 10

// Verifier checks entries one at a time, in order, so that a log of any
// length verifies in constant memory. It applies every rule a log file's
// reader applies to an entry (FORMAT.md §2): the field rules of FORMAT.md
// §1, the chain and the entry's own hash. The zero Verifier expects a log
// from its first entry.
type Verifier struct {
	head Head
	// fieldsChecked: whoever handed over the entries has already checked
	// their fields with ValidFields (a File parses every record it reads
	// under those rules), so Add checks only the chain and the hash.
	fieldsChecked bool
}

// NewVerifier returns a verifier that expects the entry following head.
// Use it to verify the suffix of a log whose prefix is already trusted.
func NewVerifier(head Head) *Verifier { return &Verifier{head: head} }

// Add checks that e continues the entries seen so far: its sequence number
// and previous hash, its fields (the kind grammar, a time in years
// 0000-9999, a payload of RFC 8785 canonical JSON of at most MaxPayloadLen
// bytes: ValidFields), and its own hash recomputed from its fields. The
// first rule e breaks is reported as a *ChainBreakError naming the field.
func (v *Verifier) Add(e Entry) error {
	idx := v.head.Size
	if err := linkError(v.head, e.Seq, e.Prev); err != nil {
		return err
	}
	if !v.fieldsChecked {
		if err := fieldError(v.head, e); err != nil {
			return err
		}
	}
	if got := EntryHash(e); got != e.Hash {
		return &ChainBreakError{Index: idx, Field: "hash", Expected: got.String(), Actual: e.Hash.String(), Head: v.head}
	}
	v.head = Head{Size: idx + 1, Hash: e.Hash}
	return nil
}

// fieldError reports, as a *ChainBreakError after head, the first field
// of e that breaks the rules ValidFields applies.
func fieldError(head Head, e Entry) error {
	idx := head.Size
	if err := validKind(e.Kind); err != nil {
		return &ChainBreakError{Index: idx, Field: "kind", Expected: "1 to 128 bytes of [a-z0-9_-] in dot-separated words", Actual: fmt.Sprintf("%q", e.Kind), Head: head}
	}
	// The wire form has a four-digit year: a time outside 0000-9999 would
	// hash like another time, so it cannot be covered by the hash.
	if err := validTime(e.Time); err != nil {
		return &ChainBreakError{Index: idx, Field: "time", Expected: "a time in years 0000-9999", Actual: e.Time.UTC().Format(time.RFC3339Nano), Head: head}
	}
	if err := ValidPayload(e.Payload); err != nil {
		return &ChainBreakError{Index: idx, Field: "payload", Expected: fmt.Sprintf("RFC 8785 canonical JSON of 1 to %d bytes", MaxPayloadLen),
			Actual: fmt.Sprintf("%d bytes refused (%s)", len(e.Payload), reason(err)), Head: head}
	}
	return nil
}

// linkError reports an entry whose sequence number or previous hash does
// not continue head.
func linkError(head Head, seq uint64, prev Hash) error {
	if seq != head.Size {
		return &ChainBreakError{Index: head.Size, Field: "seq", Expected: fmt.Sprint(head.Size), Actual: fmt.Sprint(seq), Head: head}
	}
	if prev != head.Hash {
		return &ChainBreakError{Index: head.Size, Field: "prev", Expected: head.Hash.String(), Actual: prev.String(), Head: head}
	}
	return nil
}

// Head returns the head after the entries added so far.
func (v *Verifier) Head() Head { return v.head }

// checkHead verifies that a log with head got extends trusted: it has at
// least trusted.Size entries and its entry at trusted.Size-1 had hash
// atTrusted, which must equal trusted.Hash.
func checkHead(trusted, got Head, atTrusted Hash) error {
	if got.Size < trusted.Size || atTrusted != trusted.Hash {
		return &TruncatedError{Want: trusted, Got: got}
	}
	return nil
}

// Verify checks a whole log held in memory with a Verifier (every rule a
// log file's reader applies: fields, chain and hashes) and returns its
// head. The first problem is reported as a *ChainBreakError.
func Verify(entries []Entry) (Head, error) {
	var v Verifier
	for _, e := range entries {
		if err := v.Add(e); err != nil {
			return v.Head(), err
		}
	}
	return v.Head(), nil
}

// VerifyAgainst checks entries as Verify does and that they extend the
// trusted head, so a log cut short (or rewritten from some point on) is
// detected as well.
func VerifyAgainst(entries []Entry, trusted Head) (Head, error) {
	h, err := Verify(entries)
	if err != nil {
		return h, err
	}
	at := Genesis
	if trusted.Size > 0 && trusted.Size <= uint64(len(entries)) {
		at = entries[trusted.Size-1].Hash
	}
	return h, checkHead(trusted, h, at)
}

// entryJSON is the wire form of an entry.
type entryJSON struct {
	Seq     uint64          `json:"seq"`
	Prev    Hash            `json:"prev"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
	Time    string          `json:"time"`
	Hash    Hash            `json:"hash"`
}

// MarshalJSON encodes the entry with its payload inline and the time in
// the wire form. It refuses a Seq beyond 2^53-1, which a reader parsing
// JSON numbers as doubles could not read back exactly (UnmarshalJSON
// refuses it too).
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.Payload == nil {
		return nil, fmt.Errorf("%w: entry %d has no payload", ErrMalformed, e.Seq)
	}
	if e.Seq > canon.MaxSafeInteger {
		return nil, fmt.Errorf("%w: seq %d beyond 2^53-1", ErrMalformed, e.Seq)
	}
	return canon.Marshal(entryJSON{Seq: e.Seq, Prev: e.Prev, Kind: e.Kind, Payload: e.Payload, Time: FormatTime(e.Time), Hash: e.Hash})
}

// UnmarshalJSON decodes the wire form. It checks the shape of every field
// (not the hash: use a Verifier for that).
func (e *Entry) UnmarshalJSON(b []byte) error {
	var w entryJSON
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if w.Seq > canon.MaxSafeInteger { // MarshalJSON refuses to write it
		return fmt.Errorf("%w: seq %d beyond 2^53-1", ErrMalformed, w.Seq)
	}
	if err := validKind(w.Kind); err != nil {
		return err
	}
	t, err := ParseTime(w.Time)
	if err != nil {
		return err
	}
	payload, err := canon.Transform(w.Payload)
	if err != nil {
		return fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	*e = Entry{Seq: w.Seq, Prev: w.Prev, Kind: w.Kind, Payload: payload, Time: t, Hash: w.Hash}
	return nil
}
