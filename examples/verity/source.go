package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Source names a log: a file, or a log (or, without a log id, the list of
// logs) in a SQLite or PostgreSQL database.
type Source struct {
	Dialect sqlstore.Dialect // "" for a file
	Path    string           // the file, or the SQLite database file
	DSN     string           // the PostgreSQL connection URL, without the fragment
	LogID   string           // the log in the database; "" lists them
	HasLog  bool             // a '#' was given
}

// IsFile reports whether s is a log file.
func (s Source) IsFile() bool { return s.Dialect == "" }

// String gives s back in the form ParseSource reads.
func (s Source) String() string {
	var b string
	switch s.Dialect {
	case "":
		return s.Path
	case sqlstore.SQLite:
		b = "sqlite:" + s.Path
	default:
		b = s.DSN
	}
	if s.HasLog {
		b += "#" + s.LogID
	}
	return b
}

// ParseSource reads a SRC argument: "sqlite:PATH[#LOG]",
// "postgres://…[#LOG]" (or "postgresql://"), or else a file path. The log
// id is everything after the first '#' and must be a valid sqlstore id
// (1 to sqlstore.MaxIDLen bytes of UTF-8 without NUL).
func ParseSource(s string) (Source, error) {
	switch {
	case s == "":
		return Source{}, errors.New("empty source")
	case strings.HasPrefix(s, "sqlite:"):
		path, id, has := strings.Cut(strings.TrimPrefix(s, "sqlite:"), "#")
		if path == "" {
			return Source{}, fmt.Errorf("source %q: sqlite: needs a database file path", s)
		}
		src := Source{Dialect: sqlstore.SQLite, Path: path, LogID: id, HasLog: has}
		return src, checkLogID(s, src)
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		dsn, id, has := strings.Cut(s, "#")
		u, err := url.Parse(dsn)
		if err != nil || u.Host == "" && u.Path == "" {
			return Source{}, fmt.Errorf("source %q: not a PostgreSQL URL", redact(dsn))
		}
		src := Source{Dialect: sqlstore.Postgres, DSN: dsn, LogID: id, HasLog: has}
		return src, checkLogID(redact(dsn), src)
	}
	return Source{Path: s}, nil
}

func checkLogID(s string, src Source) error {
	if !src.HasLog {
		return nil
	}
	if src.LogID == "" || len(src.LogID) > sqlstore.MaxIDLen || !utf8.ValidString(src.LogID) || strings.ContainsRune(src.LogID, 0) {
		return fmt.Errorf("source %q: the log id after '#' must be 1 to %d bytes of UTF-8 without NUL", s, sqlstore.MaxIDLen)
	}
	return nil
}

// redact hides a PostgreSQL URL's password in messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// opened is an open source: the store of its log, or (a database without
// a log id) the ids of its logs.
type opened struct {
	store trace.Store
	ids   []string
	close func() error
}

// open opens src. A log file must exist (verity never creates one) and is
// verified whole by trace.OpenFileReadOnly, which never writes to it; a
// database log is verified as it is read.
func open(ctx context.Context, src Source) (*opened, error) {
	if src.IsFile() {
		if _, err := os.Stat(src.Path); err != nil {
			return nil, err
		}
		f, err := trace.OpenFileReadOnly(src.Path)
		if err != nil {
			return nil, err
		}
		return &opened{store: f, close: f.Close}, nil
	}
	db, err := openDB(src)
	if err != nil {
		return nil, err
	}
	logs, err := sqlstore.Open(ctx, db, src.Dialect)
	if err != nil {
		db.Close()
		return nil, err
	}
	if !src.HasLog {
		o := &opened{close: db.Close}
		for id, err := range logs.IDs(ctx) {
			if err != nil {
				db.Close()
				return nil, err
			}
			o.ids = append(o.ids, id)
		}
		return o, nil
	}
	st, err := logs.Open(ctx, src.LogID)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &opened{store: st, close: func() error { return errors.Join(st.Close(), db.Close()) }}, nil
}

// openDB opens the database of src with its driver. A SQLite file must
// exist: the driver would otherwise create an empty one. The drivers are
// compiled in only with the build tag "sql" (sql.go); without it a
// database source is refused with the command that builds them in.
func openDB(src Source) (*sql.DB, error) {
	driver := "pgx"
	if src.Dialect == sqlstore.SQLite {
		driver = "sqlite"
	}
	if !slices.Contains(sql.Drivers(), driver) {
		return nil, errNoSQL
	}
	if src.Dialect == sqlstore.SQLite {
		st, err := os.Stat(src.Path)
		if err != nil {
			return nil, fmt.Errorf("sqlite database: %w", err)
		}
		if !st.Mode().IsRegular() { // the driver would block on a FIFO
			return nil, &trace.NotRegularError{Path: src.Path, Mode: st.Mode().Type()}
		}
		return sql.Open("sqlite", "file:"+src.Path+"?_pragma=busy_timeout(10000)")
	}
	return sql.Open("pgx", src.DSN)
}

// errNoSQL refuses a database source in a verity built without the SQL
// drivers. It is a usage error: the command line names a source this
// build cannot read.
var errNoSQL = usagef("this verity reads log files only; for sqlite: and postgres:// sources build it with the SQL drivers: go build -tags sql ./examples/verity")

// openLog opens src, which must name one log. A database source without a
// log id prints its logs and returns errListed.
func openLog(ctx context.Context, e *env, src Source) (*opened, error) {
	o, err := open(ctx, src)
	if err != nil {
		return nil, err
	}
	if o.store == nil {
		o.close()
		for _, id := range o.ids {
			fmt.Fprintln(e.stdout, id)
		}
		return nil, errListed
	}
	return o, nil
}

// errListed: the source was a database without a log id, and its logs
// were listed instead.
var errListed = errors.New("listed the logs")
