package main

// The command-line parsers take any text without panicking, and what they
// accept they give back unchanged:
//
//	ParseSource: FuzzParseSource, TestSourceRoundTrips (rapid)
//	ParseHead:   FuzzParseHead, TestHeadRoundTrips (rapid), TestParseHeadRefuses

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"agent.trace", "sqlite:verity.db#session-42", "sqlite:verity.db", "sqlite:#x", "sqlite:a#",
		"postgres://u:secret@db:5432/verity?sslmode=disable#log#with#hashes", "postgresql://db/x", "postgres://", "postgres://%zz#a",
		"", "#", "sqlite:a#\x00", "sqlite:a#" + strings.Repeat("x", 257)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		src, err := ParseSource(s)
		if err != nil {
			if u, perr := url.Parse(strings.SplitN(s, "#", 2)[0]); perr == nil {
				if pw, ok := u.User.Password(); ok && pw != "" {
					assert.NotContains(t, err.Error(), ":"+pw+"@", "a password never appears in an error")
				}
			}
			return
		}
		assert.Equal(t, s, src.String(), "an accepted source prints as given")
		if src.HasLog {
			assert.True(t, utf8.ValidString(src.LogID))
			assert.NotEmpty(t, src.LogID)
			assert.LessOrEqual(t, len(src.LogID), sqlstore.MaxIDLen)
		}
		if src.IsFile() {
			assert.Equal(t, s, src.Path)
		}
		again, err := ParseSource(src.String())
		require.NoError(t, err)
		assert.Equal(t, src, again)
	})
}

func TestSourceRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.StringMatching(`[^\x00]{1,40}`).Draw(t, "id")
		if len(id) > sqlstore.MaxIDLen {
			t.Skip("id too long")
		}
		path := rapid.StringMatching(`[a-z0-9/._-]{1,30}`).Draw(t, "path")
		for _, want := range []Source{
			{Dialect: sqlstore.SQLite, Path: path, LogID: id, HasLog: true},
			{Dialect: sqlstore.SQLite, Path: path},
			{Dialect: sqlstore.Postgres, DSN: "postgres://verity@127.0.0.1:5432/" + strings.ReplaceAll(path, ".", "x"), LogID: id, HasLog: true},
		} {
			got, err := ParseSource(want.String())
			require.NoError(t, err, want.String())
			assert.Equal(t, want, got)
		}
	})
}

func FuzzParseHead(f *testing.F) {
	for _, s := range []string{"0:" + strings.Repeat("0", 64), "41:" + strings.Repeat("ab", 32), "18446744073709551615:" + strings.Repeat("0", 64),
		"18446744073709551614:" + strings.Repeat("f", 64), "01:" + strings.Repeat("0", 64), "-1:", ":", "1:" + strings.Repeat("A", 64), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHead(s)
		if err != nil {
			return
		}
		assert.Positive(t, h.Size, "a kept head names an entry")
		assert.Equal(t, s, FormatHead(h), "an accepted head prints as given")
	})
}

func TestHeadRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h trace.Head
		h.Size = rapid.Uint64Range(1, ^uint64(0)).Draw(t, "size")
		copy(h.Hash[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "hash"))
		got, err := ParseHead(FormatHead(h))
		require.NoError(t, err)
		assert.Equal(t, h, got)
	})
}

func TestParseHeadRefuses(t *testing.T) {
	zero := strings.Repeat("0", 64)
	for _, s := range []string{"", "5", ":" + zero, "-1:" + zero, "+1:" + zero, "01:" + zero, " 1:" + zero, "1:" + zero[:63],
		"1:" + strings.Repeat("A", 64), "18446744073709551615:" + zero, "99999999999999999999:" + zero, "1:" + zero + ":"} {
		_, err := ParseHead(s)
		assert.Error(t, err, "%q", s)
	}
	assert.Equal(t, "", FormatHead(trace.Head{}), "an empty log has no head to keep")
}
