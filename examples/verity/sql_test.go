//go:build sql

package main

// The tests of the SQL sources (SQLite always, PostgreSQL when
// VERITY_PG_DSN is set), built with the drivers: go test -tags sql.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// sqlLog writes the demonstration into log "agent" of db and returns the
// database's source prefix (without #LOG).
func sqlLog(t testing.TB, db *sql.DB, d sqlstore.Dialect, steps int) {
	t.Helper()
	ctx := context.Background()
	logs, err := sqlstore.Open(ctx, db, d)
	require.NoError(t, err)
	st, err := logs.Create(ctx, "agent")
	require.NoError(t, err)
	_, err = logs.Create(ctx, "other log")
	require.NoError(t, err)
	clk := &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	log, err := trace.NewLog(st, trace.WithClock(clk.now))
	require.NoError(t, err)
	writeLog(t, log, clk, steps)
}

func TestSQLSources(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T) (db *sql.DB, src string, d sqlstore.Dialect)
	}{
		{"sqlite", func(t *testing.T) (*sql.DB, string, sqlstore.Dialect) {
			path := sqltest.SQLitePath(t)
			return sqltest.Open(t, sqltest.SQLiteDriver, sqltest.SQLiteDSN(path)), "sqlite:" + path, sqlstore.SQLite
		}},
		{"postgres", func(t *testing.T) (*sql.DB, string, sqlstore.Dialect) {
			dsn := sqltest.PostgresSchema(t)
			return sqltest.Open(t, sqltest.PostgresDriver, dsn), dsn, sqlstore.Postgres
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db, src, d := b.open(t)
			sqlLog(t, db, d, 30)
			list := verity(t, "inspect", src)
			require.Equal(t, exitOK, list.code, list.stderr)
			assert.Equal(t, "agent\nother log\n", list.stdout, "without #LOG the logs are listed")
			assert.Equal(t, exitUsage, verity(t, "verify", src).code, "verify needs one log")

			one := src + "#agent"
			r := verity(t, "verify", one)
			require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
			head := strings.TrimSpace(verity(t, "head", one).stdout)
			assert.Equal(t, exitOK, verity(t, "verify", one, "--head", head).code)
			assert.Equal(t, exitOK, verity(t, "replay", one).code)
			assert.Contains(t, verity(t, "inspect", one, "--kind", "claims").stdout, "PUBLISH")
			var entries []trace.Entry
			require.NoError(t, json.Unmarshal([]byte(verity(t, "export", one).stdout), &entries))
			_, err := trace.Verify(entries)
			require.NoError(t, err)
			assert.Equal(t, exitError, verity(t, "verify", src+"#missing").code)
			assert.Equal(t, exitOK, verity(t, "verify", src+"#other log").code, "an empty log verifies")

			// A changed payload: the row reads back, the chain breaks there.
			_, err = db.Exec(fmt.Sprintf(`UPDATE %s SET payload = %s WHERE log_id = 'agent' AND seq = 7`, sqlstore.EntriesTable, placeholder(d, 1)), []byte(`{"forged":true}`))
			require.NoError(t, err)
			r = verity(t, "verify", one)
			assert.Equal(t, exitChainBreak, r.code, r.stdout)
			assert.Contains(t, r.stdout, "hash chain broken at entry 7")
			assert.Contains(t, r.stdout, "entries  7 verified")

			// A row that no store could have written: corrupt.
			_, err = db.Exec(fmt.Sprintf(`UPDATE %s SET time = 'yesterday' WHERE log_id = 'agent' AND seq = 3`, sqlstore.EntriesTable))
			require.NoError(t, err)
			r = verity(t, "verify", one)
			assert.Equal(t, exitCorrupt, r.code, r.stdout)
		})
	}
}

func placeholder(d sqlstore.Dialect, n int) string {
	if d == sqlstore.Postgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// tamperedSQLite writes the demonstration into a SQLite log and changes
// the payload of entry 7, and returns the source.
func tamperedSQLite(t *testing.T) string {
	t.Helper()
	path := sqltest.SQLitePath(t)
	db := sqltest.Open(t, sqltest.SQLiteDriver, sqltest.SQLiteDSN(path))
	sqlLog(t, db, sqlstore.SQLite, 200)
	_, err := db.Exec(`UPDATE `+sqlstore.EntriesTable+` SET payload = ? WHERE log_id = 'agent' AND seq = 7`, []byte(`{"forged":true}`))
	require.NoError(t, err)
	return "sqlite:" + path + "#agent"
}

func TestViewTamperedSQLite(t *testing.T) {
	base, _ := startView(t, tamperedSQLite(t))
	var st status
	getJSON(t, base+"api/status", &st)
	assert.False(t, st.OK)
	require.NotNil(t, st.BadSeq)
	assert.Equal(t, uint64(7), *st.BadSeq)
	assert.Equal(t, "chain break", st.Problem)
	var page entriesPage
	getJSON(t, base+"api/entries?offset=0&limit=20", &page)
	assert.Equal(t, "ok", page.Rows[6].State)
	assert.Equal(t, "bad", page.Rows[7].State)
	assert.Equal(t, "unverified", page.Rows[8].State, "entries after the break are shown, not trusted")
	getJSON(t, base+"api/entries?kinds=claims", &page)
	assert.Equal(t, "bad", page.Rows[len(page.Rows)-1].State, "the bad entry stays in any filter")
}

func TestViewTamperedInChromium(t *testing.T) {
	bin := chromium(t)
	base, reqs := startView(t, tamperedSQLite(t))
	dom := browse(t, bin, base, "--dump-dom")
	require.Contains(t, dom, `data-ready="true"`)
	assert.Contains(t, dom, `data-status="bad"`)
	assert.Regexp(t, `<tr class="row bad" data-seq="7"`, dom, "the first bad entry is highlighted")
	assert.Equal(t, 1, count(dom, `class="row bad"`))
	assert.Contains(t, dom, "entry 7: trace: hash chain broken at entry 7")
	assert.Regexp(t, `<tr class="row unverified" data-seq="8"`, dom)
	checkRequests(t, base, reqs)

	// The bad entry's detail shows the stored hash and the recomputed one differ.
	dom = browse(t, bin, base+"#entry=7", "--dump-dom")
	require.Contains(t, dom, `data-ready="true"`)
	assert.Contains(t, dom, "✗ differs")
	assert.Contains(t, dom, "the first entry that does not verify")
	assert.Contains(t, dom, `"forged": true`)

	shot := filepath.Join(t.TempDir(), "tampered.png")
	browse(t, bin, base, "--screenshot="+shot)
	checkNotBlank(t, shot)
	if dir := os.Getenv("VERITY_VIEW_SCREENSHOT_DIR"); dir != "" {
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tampered.png"), b, 0o644))
	}
}
