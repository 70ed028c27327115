//go:build !sql

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSQLSourceNeedsTheTag: built without the SQL drivers, verity refuses
// a database source as a usage error naming the build that reads it, and
// creates no database file.
func TestSQLSourceNeedsTheTag(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "verity.db")
	assert.NoError(t, os.WriteFile(db, nil, 0o600))
	for _, src := range []string{"sqlite:" + db + "#agent", "sqlite:" + db, "postgres://verity@127.0.0.1:1/verity#agent"} {
		for _, cmd := range []string{"verify", "inspect", "view"} {
			r := verity(t, cmd, src)
			assert.Equal(t, exitUsage, r.code, "%s %s: %s", cmd, src, r.stderr)
			assert.Contains(t, r.stderr, "go build -tags sql ./examples/verity", "%s %s", cmd, src)
		}
	}
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no file beside the database")
}
