package trace

// The files under testdata/vectors are language-neutral test vectors for
// the file format (FORMAT.md §7): a few valid logs and, for each, single
// mutations with the outcome a reader must report. This file generates
// them and checks them. To change a vector, edit the generator and run
//
//	go test ./trace -run TestVectorsUpToDate -update
//
// Records are encoded here from their raw field bytes (vecRecord.frame),
// not by the library's writer, so that records the writer refuses can be
// built too; TestVectorsWriterAgrees checks that the writer produces the
// valid logs byte for byte. Each expected outcome follows from the reading
// rules of FORMAT.md §4, stated per mutation below, not from running the
// reader.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateVectors = flag.Bool("update", false,
	"TestVectorsUpToDate: rewrite testdata/vectors from the generator in vectors_test.go")

const vectorDir = "testdata/vectors"

// vector is one entry of testdata/vectors/index.json.
type vector struct {
	File        string `json:"file"`
	Description string `json:"description"`
	Expect      string `json:"expect"`         // ok, torn@i, corrupt@i, chain_break@i or not_a_log
	Head        *Head  `json:"head,omitempty"` // ok: the log's head; torn@i: the head of the records before i
	data        []byte
}

// vectorIndex is the layout of index.json.
type vectorIndex struct {
	Format  string   `json:"format"`
	Vectors []vector `json:"vectors"`
}

// vecEntry is what a valid log holds: an entry's fields in wire form.
type vecEntry struct{ kind, time, payload string }

// vecRecord is one record spelled as raw field bytes.
type vecRecord struct {
	seq                 uint64
	prev                Hash
	kind, time, payload string
}

// frame encodes r as a file record with the hash of its fields, whatever
// they are, and returns the record and that hash.
func (r vecRecord) frame() ([]byte, Hash) {
	body := binary.BigEndian.AppendUint64(nil, r.seq)
	body = append(body, r.prev[:]...)
	body = binary.BigEndian.AppendUint32(body, uint32(len(r.kind)))
	body = append(body, r.kind...)
	body = append(body, r.time...)
	body = binary.BigEndian.AppendUint32(body, uint32(len(r.payload)))
	body = append(body, r.payload...)
	h := Hash(sha256.Sum256(append([]byte{0x00}, body...)))
	body = append(body, h[:]...)
	return append(frameHeader(uint32(len(body))), body...), h
}

// frameHeader is a record's length and the CRC-32C of the length.
func frameHeader(n uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, n)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// vecLog is a log file and where its records lie.
type vecLog struct {
	data   []byte
	frames [][]byte
	offs   []int // offset of each record
	hashes []Hash
}

func (l vecLog) n() int { return len(l.frames) }

// head is the head after the first k records.
func (l vecLog) head(k int) *Head {
	if k == 0 {
		return &Head{}
	}
	return &Head{Size: uint64(k), Hash: l.hashes[k-1]}
}

// buildLog chains entries into a log file; edit, when not nil, may change
// each record after its seq and prev are set and before it is hashed, and
// the next record is chained to the changed record's hash.
func buildLog(entries []vecEntry, edit func(i int, r *vecRecord)) vecLog {
	l := vecLog{data: []byte(fileMagic)}
	var prev Hash
	for i, e := range entries {
		r := vecRecord{seq: uint64(i), prev: prev, kind: e.kind, time: e.time, payload: e.payload}
		if edit != nil {
			edit(i, &r)
		}
		f, h := r.frame()
		l.offs = append(l.offs, len(l.data))
		l.data = append(l.data, f...)
		l.frames = append(l.frames, f)
		l.hashes = append(l.hashes, h)
		prev = h
	}
	return l
}

// withFrames is a log file holding the given records in order.
func withFrames(frames ...[]byte) []byte {
	return append([]byte(fileMagic), slices.Concat(frames...)...)
}

var (
	exampleEntries = []vecEntry{
		{"example.greeting", "2026-01-02T03:04:05.000000006Z", `{"hello":"world"}`},
		{"example.greeting", "2026-01-02T03:04:06.000000006Z", `{"hello":"again"}`},
	}
	// mixedEntries: the shortest record the format allows (one-byte kind
	// and payload), non-ASCII text, a kind of the maximum length, string
	// escapes, the first and last instants of the wire form, 29 February
	// of year 0000 (a leap year), and times that do not increase.
	mixedEntries = []vecEntry{
		{"a", "0000-01-01T00:00:00.000000000Z", `0`},
		{"kernel.execute", "2024-02-29T12:34:56.123456789Z", `{"action":"scale-out","cost":1500,"note":"ünïcode ✓ 𝄞","tags":["x","y"]}`},
		{strings.Repeat("abcdefg_-.", 12) + "z1234567", "9999-12-31T23:59:59.999999999Z",
			`{"blob":"` + strings.Repeat("0123456789", 60) + `","esc":"\"quoted\" \\ line\nbreak\ttab \u001f"}`},
		{"claims.decision_v2", "0000-02-29T00:00:00.000000000Z", `{"n":-12,"ok":false,"x":1.5,"z":null}`},
	}
	stepEntries = []vecEntry{
		{"test.step", "2026-01-02T03:04:05.000000006Z", `{"i":0}`},
		{"test.step", "2026-01-02T03:04:06.000000006Z", `{"i":1}`},
		{"test.step", "2026-01-02T03:04:07.000000006Z", `{"i":2}`},
	}
)

// Field values the writer refuses; each is placed, with a correct hash,
// into a chain whose later records link to it.
var (
	badKinds = []struct{ name, kind string }{
		{"empty", ""},
		{"upper-case", "Test.step"},
		{"double-dot", "test..step"},
		{"leading-dot", ".test"},
		{"trailing-dot", "test."},
		{"space", "test step"},
		{"slash", "test/step"},
		{"non-ascii", "test.étape"},
		{"nul", "test\x00"},
		{"129-bytes", strings.Repeat("k", MaxKindLen+1)},
	}
	badTimes = []struct{ name, time string }{
		{"february-30", "2026-02-30T00:00:00.000000000Z"},
		{"february-29-common-year", "2023-02-29T00:00:00.000000000Z"},
		{"february-29-1900", "1900-02-29T00:00:00.000000000Z"},
		{"april-31", "2026-04-31T00:00:00.000000000Z"},
		{"month-13", "2026-13-01T00:00:00.000000000Z"},
		{"month-00", "2026-00-10T00:00:00.000000000Z"},
		{"day-00", "2026-01-00T00:00:00.000000000Z"},
		{"hour-24", "2026-01-01T24:00:00.000000000Z"},
		{"minute-60", "2026-01-01T23:60:00.000000000Z"},
		{"leap-second", "2016-12-31T23:59:60.000000000Z"},
		{"lower-case-z", "2026-01-01T00:00:00.000000000z"},
		{"lower-case-t", "2026-01-01t00:00:00.000000000Z"},
		{"space-for-t", "2026-01-01 00:00:00.000000000Z"},
		{"comma-fraction", "2026-01-01T00:00:00,000000000Z"},
		{"offset-not-z", "2026-01-01T00:00:00.00000000+0"},
		{"signed-year", "+026-01-01T00:00:00.000000000Z"},
		{"letter-digit", "2026-01-01T00:00:00.00000000aZ"},
	}
	badPayloads = []struct{ name, payload string }{
		{"empty", ``},
		{"not-json", `x`},
		{"unterminated", `{"a":1`},
		{"unsorted-keys", `{"b":1,"a":2}`},
		{"duplicate-key", `{"a":1,"a":2}`},
		{"inner-space", `{ }`},
		{"leading-space", ` {}`},
		{"trailing-newline", "{}\n"},
		{"trailing-comma", `[1,]`},
		{"fraction-zero", `1.0`},
		{"exponent", `1E2`},
		{"minus-zero", `-0`},
		{"escaped-letter", `"\u0041"`},
		{"escaped-non-ascii", `"\u00e9"`},
		{"escaped-slash", `"\/"`},
		{"invalid-utf8", "\"\xff\""},
		{"two-values", `1 2`},
	}
)

// fieldSpans are the fields of a record frame, as (name, start, end).
func fieldSpans(frame []byte) [][3]any {
	kl := int(binary.BigEndian.Uint32(frame[48:52]))
	pl := int(binary.BigEndian.Uint32(frame[52+kl+timeLen : 56+kl+timeLen]))
	p := 56 + kl + timeLen
	return [][3]any{
		{"length", 0, 4}, {"crc", 4, 8}, {"seq", 8, 16}, {"prev", 16, 48},
		{"kind-length", 48, 52}, {"kind", 52, 52 + kl}, {"time", 52 + kl, 52 + kl + timeLen},
		{"payload-length", 52 + kl + timeLen, p}, {"payload", p, p + pl}, {"hash", p + pl, p + pl + 32},
	}
}

// generateVectors returns every vector, in index order.
func generateVectors() []vector {
	var vs []vector
	add := func(file, desc, expect string, head *Head, data []byte) {
		vs = append(vs, vector{File: file, Description: desc, Expect: expect, Head: head, data: data})
	}
	at := func(outcome string, i int) string { return fmt.Sprintf("%s@%d", outcome, i) }

	// Empty logs.
	add("empty-0-bytes.log", "A 0-byte file is an empty log.", "ok", &Head{}, []byte{})
	add("empty.log", "The magic alone is an empty log.", "ok", &Head{}, []byte(fileMagic))
	add("empty--zero-tail.log", "The magic followed by zeros (space allocated, never written) is a torn record at entry 0.",
		at("torn", 0), &Head{}, append([]byte(fileMagic), make([]byte, 64)...))

	// Not logs, and torn headers.
	add("not-a-log--version-2.log", "The magic with another version is not a trace log.", "not_a_log", nil,
		append([]byte("VTRACE2\n"), buildLog(exampleEntries, nil).data[8:]...))
	add("not-a-log--lower-case.log", "The magic in lower case is not a trace log.", "not_a_log", nil, []byte("vtrace1\n"))
	add("not-a-log--crlf.log", "The magic with CR LF is not a trace log.", "not_a_log", nil, []byte("VTRACE1\r\n"))
	add("not-a-log--short.log", "Five bytes that are not a prefix of the magic are not a trace log.", "not_a_log", nil, []byte("hello"))
	add("not-a-log--zeros.log", "A file of zeros is not a trace log.", "not_a_log", nil, make([]byte, 64))
	add("torn-header--1.log", "One byte of the magic is a torn header: torn at entry 0.", at("torn", 0), &Head{}, []byte(fileMagic[:1]))
	add("torn-header--7.log", "Seven bytes of the magic are a torn header: torn at entry 0.", at("torn", 0), &Head{}, []byte(fileMagic[:7]))

	// Valid logs and their single mutations.
	bases := []struct {
		name, desc string
		entries    []vecEntry
	}{
		{"example", "The worked example of FORMAT.md §3: two entries.", exampleEntries},
		{"mixed", "Four entries: the shortest record (112-byte body), non-ASCII text, a 128-byte kind, string escapes, the first and last instants of the wire form, 29 February 0000, times that do not increase.", mixedEntries},
	}
	for _, b := range bases {
		l := buildLog(b.entries, nil)
		n := l.n()
		name := func(m string) string { return b.name + "--" + m + ".log" }
		add(b.name+".log", b.desc, "ok", l.head(n), l.data)

		// A flipped bit (xor 0x01) in the last byte of each field of each
		// record. The length and its CRC no longer match: corrupt,
		// wherever the record lies. Any other field: the record no longer
		// matches its hash (or a field breaks its rule): torn if it is the
		// final record, corrupt otherwise.
		for i, f := range l.frames {
			for _, span := range fieldSpans(f) {
				field, end := span[0].(string), span[2].(int)
				data := bytes.Clone(l.data)
				data[l.offs[i]+end-1] ^= 0x01
				desc := fmt.Sprintf("Record %d: the last byte of its %s field has a bit flipped.", i, field)
				switch {
				case field == "length" || field == "crc":
					add(name(fmt.Sprintf("flip-%d-%s", i, field)), desc, at("corrupt", i), nil, data)
				case i == n-1:
					add(name(fmt.Sprintf("flip-%d-%s", i, field)), desc, at("torn", i), l.head(i), data)
				default:
					add(name(fmt.Sprintf("flip-%d-%s", i, field)), desc, at("corrupt", i), nil, data)
				}
			}
		}

		// Truncations: at a record boundary the shorter log is valid (only
		// a kept head tells it was cut); anywhere inside a record, that
		// record is torn.
		add(name("cut-0"), "Cut to 0 bytes: an empty log.", "ok", &Head{}, nil)
		add(name("cut-3"), "Cut inside the magic: torn at entry 0.", at("torn", 0), &Head{}, l.data[:3])
		add(name("cut-8"), "Cut after the magic: an empty log.", "ok", &Head{}, l.data[:8])
		for i, f := range l.frames {
			for _, k := range []int{3, 8, 8 + (len(f)-8)/2, len(f) - 1} {
				cut := l.offs[i] + k
				add(name(fmt.Sprintf("cut-%d", cut)), fmt.Sprintf("Cut %d bytes into record %d: torn.", k, i),
					at("torn", i), l.head(i), l.data[:cut])
			}
			if i < n-1 {
				cut := l.offs[i] + len(f)
				add(name(fmt.Sprintf("cut-%d", cut)), fmt.Sprintf("Cut after record %d: a valid log of %d entries.", i, i+1),
					"ok", l.head(i+1), l.data[:cut])
			}
		}
		add(name("zero-tail"), "Zeros after the last record (space allocated, never written): torn at the next entry.",
			at("torn", n), l.head(n), append(bytes.Clone(l.data), make([]byte, 64)...))
		lastZeroed := bytes.Clone(l.data)
		clear(lastZeroed[len(lastZeroed)-10:])
		add(name("zeroed-end-of-last"), "The last 10 bytes of the last record zeroed and zeros after it: the last record is torn.",
			at("torn", n-1), l.head(n-1), append(lastZeroed, make([]byte, 64)...))
		// A crash kept the first 5 bytes of the last record's frame header
		// (the page holding the rest of the header and the body was lost):
		// its CRC fails and only zeros follow, so it is torn; a non-zero
		// byte after the header makes it corrupt.
		partial := bytes.Clone(l.data)
		clear(partial[l.offs[n-1]+5:])
		add(name("partial-header-of-last"), "The last record keeps only the first 5 bytes of its frame header, zeros after them: the last record is torn.",
			at("torn", n-1), l.head(n-1), partial)
		partialThenData := bytes.Clone(partial)
		partialThenData[len(partialThenData)-1] = 0x01
		add(name("partial-header-of-last-then-data"), "As partial-header-of-last, but the file's last byte is 0x01: corrupt at the last record.",
			at("corrupt", n-1), nil, partialThenData)
		firstZeroed := bytes.Clone(l.data)
		clear(firstZeroed[l.offs[1]-10 : l.offs[1]])
		add(name("zeroed-end-of-0"), "The last 10 bytes of record 0 zeroed, later records intact: corrupt at entry 0.",
			at("corrupt", 0), nil, firstZeroed)

		// Intact records out of place: the first that does not link is a
		// chain break, even when it is the final record. Dropping the
		// last record leaves a valid, shorter log.
		for i := 0; i+1 < n; i++ {
			fr := slices.Clone(l.frames)
			fr[i], fr[i+1] = fr[i+1], fr[i]
			add(name(fmt.Sprintf("swap-%d-%d", i, i+1)), fmt.Sprintf("Records %d and %d swapped.", i, i+1),
				at("chain_break", i), nil, withFrames(fr...))
			add(name(fmt.Sprintf("drop-%d", i)), fmt.Sprintf("Record %d removed.", i),
				at("chain_break", i), nil, withFrames(slices.Delete(slices.Clone(l.frames), i, i+1)...))
		}
		add(name(fmt.Sprintf("drop-%d", n-1)), "The last record removed: a valid, shorter log (only a kept head tells).",
			"ok", l.head(n-1), withFrames(l.frames[:n-1]...))
		for _, i := range []int{0, n - 1} {
			add(name(fmt.Sprintf("duplicate-%d", i)), fmt.Sprintf("Record %d written twice.", i),
				at("chain_break", i+1), nil, withFrames(slices.Insert(slices.Clone(l.frames), i, l.frames[i])...))
		}
	}

	// Records the writer refuses, re-chained with correct hashes: a bad
	// field makes the record corrupt, or torn when it is the final record.
	steps := buildLog(stepEntries, nil)
	add("steps.log", "Three entries of kind test.step.", "ok", steps.head(3), steps.data)
	rechained := func(what, desc string, set func(r *vecRecord)) {
		for _, i := range []int{1, 2} {
			l := buildLog(stepEntries, func(j int, r *vecRecord) {
				if j == i {
					set(r)
				}
			})
			expect, head, where := at("corrupt", i), (*Head)(nil), "record 1 of 3"
			if i == 2 {
				expect, head, where = at("torn", i), steps.head(2), "the final record"
			}
			add(fmt.Sprintf("steps--%d-%s.log", i, what), fmt.Sprintf("%s, in %s, with a correct hash.", desc, where), expect, head, l.data)
		}
	}
	for _, k := range badKinds {
		rechained("kind-"+k.name, fmt.Sprintf("Kind %q", k.kind), func(r *vecRecord) { r.kind = k.kind })
	}
	for _, c := range badTimes {
		rechained("time-"+c.name, fmt.Sprintf("Time %q", c.time), func(r *vecRecord) { r.time = c.time })
	}
	for _, p := range badPayloads {
		rechained("payload-"+p.name, fmt.Sprintf("Payload %q", p.payload), func(r *vecRecord) { r.payload = p.payload })
	}

	// Record lengths outside 112..16777454 with a correct CRC: corrupt,
	// even as the final record.
	short111, _ := vecRecord{seq: 1, prev: steps.hashes[0], kind: "a", time: stepEntries[1].time}.frame()
	short110, _ := vecRecord{seq: 1, prev: steps.hashes[0], time: stepEntries[1].time}.frame()
	for _, c := range []struct {
		name, desc string
		frame      []byte
	}{
		{"length-111", "A 111-byte record (kind \"a\", empty payload, correct hash)", short111},
		{"length-110", "A 110-byte record (empty kind, empty payload, correct hash)", short110},
		{"length-0", "A record length of 0", frameHeader(0)},
		{"length-max-plus-1", fmt.Sprintf("A record length of %d", maxBodyLen+1), frameHeader(uint32(maxBodyLen + 1))},
	} {
		add("steps--1-"+c.name+".log", c.desc+" as record 1 of 3.", at("corrupt", 1), nil, withFrames(steps.frames[0], c.frame, steps.frames[2]))
		add("steps--1-"+c.name+"-final.log", c.desc+" as the final record.", at("corrupt", 1), nil, withFrames(steps.frames[0], c.frame))
	}

	// Well-formed records, hashed correctly, that do not link.
	linkBreaks := []struct {
		name, desc string
		i          int
		set        func(r *vecRecord)
	}{
		{"seq-skips", "Record 1 has seq 2", 1, func(r *vecRecord) { r.seq = 2 }},
		{"seq-repeats", "Record 2 has seq 1", 2, func(r *vecRecord) { r.seq = 1 }},
		{"first-seq-1", "Record 0 has seq 1", 0, func(r *vecRecord) { r.seq = 1 }},
		{"first-prev-not-genesis", "Record 0's prev is not the genesis hash", 0, func(r *vecRecord) { r.prev[31] = 1 }},
		{"prev-genesis", "Record 1's prev is the genesis hash", 1, func(r *vecRecord) { r.prev = Genesis }},
		{"final-prev-wrong", "The final record's prev is not record 1's hash", 2, func(r *vecRecord) { r.prev = steps.hashes[0] }},
	}
	for _, c := range linkBreaks {
		l := buildLog(stepEntries, func(j int, r *vecRecord) {
			if j == c.i {
				c.set(r)
			}
		})
		add("steps--"+c.name+".log", c.desc+", with a correct hash: a chain break.", at("chain_break", c.i), nil, l.data)
	}
	foreign := buildLog(exampleEntries, nil)
	add("steps--foreign-final.log", "Record 1 of another log appended as the final record: a chain break.",
		at("chain_break", 3), nil, withFrames(append(slices.Clone(steps.frames), foreign.frames[1])...))
	return vs
}

// vectorFiles renders the vectors as files: each log and index.json.
func vectorFiles(vs []vector) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, v := range vs {
		if _, dup := out[v.File]; dup {
			return nil, fmt.Errorf("vector %s defined twice", v.File)
		}
		out[v.File] = v.data
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(vectorIndex{Format: "verity trace format, version 1: test vectors (FORMAT.md §7)", Vectors: vs}); err != nil {
		return nil, err
	}
	out["index.json"] = buf.Bytes()
	return out, nil
}

// TestVectorsUpToDate regenerates every vector in memory and fails if a
// file under testdata/vectors differs, is missing or is not generated.
// With -update it rewrites the directory first.
func TestVectorsUpToDate(t *testing.T) {
	want, err := vectorFiles(generateVectors())
	require.NoError(t, err)
	if *updateVectors {
		require.NoError(t, os.RemoveAll(vectorDir))
		require.NoError(t, os.MkdirAll(vectorDir, 0o755))
		for name, data := range want {
			require.NoError(t, os.WriteFile(filepath.Join(vectorDir, name), data, 0o644))
		}
	}
	got := map[string][]byte{}
	entries, err := os.ReadDir(vectorDir)
	require.NoError(t, err)
	for _, e := range entries {
		got[e.Name()], err = os.ReadFile(filepath.Join(vectorDir, e.Name()))
		require.NoError(t, err)
	}
	const hint = "(go test ./trace -run TestVectorsUpToDate -update rewrites them from vectors_test.go)"
	total := 0
	for _, name := range slices.Sorted(maps.Keys(want)) {
		total += len(want[name])
		data, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s/%s is missing %s", vectorDir, name, hint)
		case !bytes.Equal(data, want[name]):
			t.Errorf("%s/%s is not what the generator writes %s", vectorDir, name, hint)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			t.Errorf("%s/%s is not generated %s", vectorDir, name, hint)
		}
	}
	assert.Less(t, total, 512<<10, "the vectors stay small")
}

// outcome runs OpenFile on data and names what it reports, as the index
// spells outcomes; for ok and torn it also returns the head (of the log,
// or of the records before the torn one, read after RepairFile).
func outcome(t *testing.T, data []byte) (string, *Head) {
	fs := faultFSWith(data)
	s, err := OpenFile("log", FileOptions{fs: fs})
	var (
		torn    *TornTailError
		corrupt *CorruptRecordError
		cb      *ChainBreakError
	)
	switch {
	case err == nil:
		h, err := s.Head(context.Background())
		require.NoError(t, err)
		require.NoError(t, s.Close())
		return "ok", &h
	case errors.Is(err, ErrNotLog):
		return "not_a_log", nil
	case errors.As(err, &torn):
		_, err := repairFile("log", fs)
		require.NoError(t, err)
		s, err := OpenFile("log", FileOptions{fs: fs})
		require.NoError(t, err, "a repaired log opens")
		h, err := s.Head(context.Background())
		require.NoError(t, err)
		require.NoError(t, s.Close())
		return fmt.Sprintf("torn@%d", torn.Index), &h
	case errors.As(err, &corrupt):
		return fmt.Sprintf("corrupt@%d", corrupt.Index), nil
	case errors.As(err, &cb):
		return fmt.Sprintf("chain_break@%d", cb.Index), nil
	}
	t.Fatalf("OpenFile returned an error the vectors do not name: %v", err)
	return "", nil
}

// TestVectors reads every committed vector with OpenFile and checks the
// outcome (and head) index.json gives for it.
func TestVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(vectorDir, "index.json"))
	require.NoError(t, err)
	var idx vectorIndex
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&idx))
	require.NotEmpty(t, idx.Vectors)
	for _, v := range idx.Vectors {
		data, err := os.ReadFile(filepath.Join(vectorDir, v.File))
		require.NoError(t, err)
		got, head := outcome(t, data)
		if !assert.Equal(t, v.Expect, got, "%s: %s", v.File, v.Description) {
			continue
		}
		if v.Head != nil || head != nil {
			assert.Equal(t, v.Head, head, "%s: head", v.File)
		}
	}
}

// TestVectorsWriterAgrees: the library's writer (Next and File.Append)
// writes each valid vector log byte for byte, so the vectors' independent
// encoder and the writer agree.
func TestVectorsWriterAgrees(t *testing.T) {
	for _, entries := range [][]vecEntry{exampleEntries, mixedEntries, stepEntries} {
		path := filepath.Join(t.TempDir(), "log")
		s, err := OpenFile(path, FileOptions{Sync: SyncManual})
		require.NoError(t, err)
		var h Head
		for _, e := range entries {
			at, err := ParseTime(e.time)
			require.NoError(t, err)
			var entry Entry
			entry, h, err = Next(h, e.kind, []byte(e.payload), at)
			require.NoError(t, err, "%+v", e)
			require.NoError(t, s.Append(context.Background(), entry))
		}
		require.NoError(t, s.Close())
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, buildLog(entries, nil).data, got)
	}
}

// vectorLogs returns the bytes of every committed vector log (for fuzz
// seeds).
func vectorLogs(tb testing.TB) [][]byte {
	var out [][]byte
	err := filepath.WalkDir(vectorDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, b)
		return err
	})
	require.NoError(tb, err)
	return out
}
