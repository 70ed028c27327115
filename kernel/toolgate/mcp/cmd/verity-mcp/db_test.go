package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace/sqlstore"
)

func TestParseDB(t *testing.T) {
	good := map[string]dbSpec{
		"postgres://verity@127.0.0.1:5432/verity?sslmode=disable": {Driver: "pgx", DSN: "postgres://verity@127.0.0.1:5432/verity?sslmode=disable", Dialect: sqlstore.Postgres},
		"postgresql://u:p@db/x":                                   {Driver: "pgx", DSN: "postgresql://u:p@db/x", Dialect: sqlstore.Postgres},
		"postgres:///x?host=/run/postgresql":                      {Driver: "pgx", DSN: "postgres:///x?host=/run/postgresql", Dialect: sqlstore.Postgres},
		"sqlite:/var/lib/verity/budgets.db":                       {Driver: "sqlite", DSN: "file:/var/lib/verity/budgets.db?" + sqliteParams, Dialect: sqlstore.SQLite},
		"sqlite:budgets.db":                                       {Driver: "sqlite", DSN: "file:budgets.db?" + sqliteParams, Dialect: sqlstore.SQLite},
	}
	for in, want := range good {
		got, err := parseDB(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	bad := []string{"", "mysql://x", "sqlite:", "sqlite::memory:", "sqlite:file:x.db", "sqlite:x.db?mode=ro", "postgres://", "postgres://u:secret@[::1/x",
		"Postgres://x", "sqlite:a\x00b"}
	for _, in := range bad {
		_, err := parseDB(in)
		assert.ErrorIs(t, err, errDBFlag, "%q", in)
	}
	// An unparsable URL's error does not repeat its password.
	_, err := parseDB("postgres://u:secret@[::1/x")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret")
}

// FuzzParseDB: no -db value makes parseDB panic; an accepted one names a
// known driver and a valid dialect, and a SQLite one keeps its path and
// its settings.
func FuzzParseDB(f *testing.F) {
	for _, s := range []string{"postgres://verity@127.0.0.1:5432/verity?sslmode=disable", "postgresql://u:p@h/d",
		"sqlite:/tmp/b.db", "sqlite:", "sqlite:x?y", "postgres://u:pw@[::1/x", "mysql://x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := parseDB(s)
		if err != nil {
			require.True(t, errors.Is(err, errDBFlag), "error %v does not wrap errDBFlag", err)
			return
		}
		require.NoError(t, spec.Dialect.Valid())
		switch spec.Driver {
		case "pgx":
			assert.Equal(t, sqlstore.Postgres, spec.Dialect)
			assert.Equal(t, s, spec.DSN)
		case "sqlite":
			assert.Equal(t, sqlstore.SQLite, spec.Dialect)
			path := strings.TrimPrefix(s, "sqlite:")
			assert.Equal(t, "file:"+path+"?"+sqliteParams, spec.DSN)
			assert.NotContains(t, path, "?")
		default:
			t.Fatalf("unknown driver %q", spec.Driver)
		}
	})
}
