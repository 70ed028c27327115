package trace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestHeadTextRoundTrips: every head prints as SEQ:HASH (the last entry's
// sequence number, Size-1) or "empty", and ParseHead reads it back.
func TestHeadTextRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h Head
		h.Size = rapid.Uint64().Draw(t, "size")
		if h.Size > 0 {
			copy(h.Hash[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "hash"))
		}
		s := h.String()
		got, err := ParseHead(s)
		require.NoError(t, err)
		require.Equal(t, h, got)
		if h.Size > 0 {
			require.True(t, strings.HasPrefix(s, strings.TrimSuffix(Head{Size: h.Size}.String(), ":"+Genesis.String())))
		}
	})
}

func TestHeadString(t *testing.T) {
	h := Head{Size: 15, Hash: Hash{0x47, 0x99}}
	assert.Equal(t, "14:4799"+strings.Repeat("0", 60), h.String(), "the number is the last sequence number")
	assert.Equal(t, "empty", Head{}.String())
}

func TestParseHeadRefuses(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for _, s := range []string{
		"", "14", ":" + hash, "14:", "-1:" + hash, "+1:" + hash, "01:" + hash, "1.0:" + hash, " 1:" + hash,
		"18446744073709551615:" + hash, "18446744073709551616:" + hash, "1:" + strings.ToUpper(hash),
		"1:" + hash[:63], "1:" + hash + "0", "1:" + hash + " ", "Empty", "{15 " + hash + "}",
	} {
		_, err := ParseHead(s)
		assert.ErrorIs(t, err, ErrMalformed, "%q", s)
		if err != nil {
			assert.Equal(t, 1, strings.Count(err.Error(), "malformed"), "%q: %v", s, err)
		}
	}
	h, err := ParseHead("18446744073709551614:" + hash)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<64-1), h.Size)
}

func FuzzParseHead(f *testing.F) {
	hash := strings.Repeat("0f", 32)
	for _, s := range []string{"0:" + hash, "14:" + hash, "empty", "", "01:" + hash, "1:" + strings.ToUpper(hash),
		"18446744073709551614:" + hash, "18446744073709551615:" + hash, "1:", ":", "1:" + hash + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHead(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%q: %v does not wrap ErrMalformed", s, err)
			}
			return
		}
		if h.String() != s {
			t.Fatalf("%q parses to a head that prints as %q", s, h.String())
		}
	})
}

// TestDamageCarriesTheVerifiedHead: the errors of a torn, corrupt or
// broken log file carry the head of the entries before the damage — for
// a torn tail, the head RepairFile keeps.
func TestDamageCarriesTheVerifiedHead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.trace")
	es := buildChain(t, 8)
	f, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	require.NoError(t, f.Append(t.Context(), es...))
	require.NoError(t, f.Close())
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	// Every record has the same length here, so record n starts at
	// magic + n*len.
	recLen := (len(good) - len(fileMagic)) / len(es)
	offs := make([]int, len(es)+1)
	for i := range offs {
		offs[i] = len(fileMagic) + i*recLen
	}
	at := func(n int) Head { return Head{Size: uint64(n), Hash: es[n-1].Hash} }

	write := func(b []byte) string {
		p := filepath.Join(t.TempDir(), "bad.trace")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	torn := write(good[:len(good)-5])
	_, err = OpenFileReadOnly(torn)
	var te *TornTailError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, at(7), te.Head)
	res, err := RepairFile(torn)
	require.NoError(t, err)
	assert.Equal(t, te.Head.Size, res.Entries)

	flipped := append([]byte(nil), good...)
	flipped[offs[3]+60] ^= 1
	_, err = OpenFileReadOnly(write(flipped))
	var ce *CorruptRecordError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, at(3), ce.Head)

	removed := append(append([]byte(nil), good[:offs[3]]...), good[offs[4]:]...)
	_, err = OpenFileReadOnly(write(removed))
	var be *ChainBreakError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, at(3), be.Head)

	// The pure verifier too.
	bad := append([]Entry(nil), es...)
	bad[5].Payload = []byte(`{"x":2}`)
	_, err = Verify(bad)
	require.ErrorAs(t, err, &be)
	assert.Equal(t, at(5), be.Head)
}
