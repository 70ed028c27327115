// Command beliefserver runs the belief protocol over HTTP/JSON.
//
//	go run ./examples/beliefserver -addr 127.0.0.1:8080 -data DIR
//
// With -data, every session is one trace file in DIR and comes back after
// a restart; with -db postgres://USER@HOST/DB (several servers may share
// it) or -db sqlite:PATH, sessions live in that database; with neither,
// they live in memory. -allow-force lets
// REQUEST_TERMINATION with context.force = true end any session. Sessions
// are opened on first use, from the latest checkpoint of their log; at
// most -cache-size idle ones stay open, and -checkpoint-every sets how
// many events a log holds between checkpoints.
//
// No client can hold the server: a request's headers must arrive within
// -read-header-timeout (10s), the whole request within -read-timeout
// (30s, and its body is at most -max-body bytes), its answer be taken
// within -write-timeout (60s); a connection idle between requests is
// closed after -idle-timeout (60s); at most -max-conns (256) connections
// are open at once, the one idle longest closed to let a new one in, and
// a new one finding only requests in progress waits -conn-wait (1s) for
// room before it is closed; at most -max-conns-per-client (64) are open
// from one client address, and one more from a client whose connections
// are all in requests is closed at once (internal/httpguard). Logs are
// structured (log/slog, JSON on stderr); SIGINT or SIGTERM shut the server
// down gracefully.
//
// With -data and -sign-key FILE, each session's log keeps a signed
// checkpoint of its head beside it, DIR/ID.trace.checkpoint (origin
// KEYNAME/ID), every -sign-every entries and when the log is closed
// (sign.go; -checkpoint-every is the belief snapshots' interval).
//
// With -token-file FILE, every request needs a bearer token whose SHA-256
// digest is a line of FILE, and a session belongs to the principal that
// declared it: any other gets 404 (belief/server's doc.go). Without it,
// the server binds only loopback addresses unless -insecure-no-auth is
// given. -tls-cert and -tls-key serve HTTPS (security.go).
//
// With -data, the server holds DIR's lock for as long as it runs: a
// second server on the same DIR exits at once with status 1 and an error
// naming the process that holds it (one writer per directory; see
// trace's "One writer").
//
// Exit status: 0 after a graceful shutdown (or -h), 1 on a runtime error
// (a directory or database that cannot be opened or is in use, a listen
// address that cannot be bound, a server failure), 2 on a usage error
// (an unknown flag, an argument, -data with -db, a malformed -db,
// -cache-size below 1, a negative -checkpoint-every, -max-body below 1,
// a -token-file, -tls-cert, -tls-key or -sign-key that is not a regular
// file or is larger than its bound,
// -sign-key without -data or with a malformed or open key file, a
// malformed -token-file, -tls-cert without -tls-key or the reverse, a
// key pair that does not load, a non-loopback -addr without -token-file
// or -insecure-no-auth).
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for -db postgres://
	_ "modernc.org/sqlite"             // registers the "sqlite" driver for -db sqlite:PATH

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/belief/server"
	"github.com/verity-go/verity/belief/sqlstorage"
	"github.com/verity-go/verity/internal/httpguard"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exitCode(run(ctx, os.Args[1:], os.Stderr, nil), os.Stderr))
}

// Exit codes (documented above and in -h).
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const exitHelp = `
exit status: 0 stopped gracefully (or -h), 1 runtime error (a -data
directory or -db database that cannot be opened or is in use by another
server, an address that cannot be bound), 2 usage error (bad flag or
argument, -data with -db, a malformed -db, -cache-size below 1, a
negative -checkpoint-every, -max-body below 1, a malformed -token-file,
-tls-cert without -tls-key, a -token-file, -tls-cert, -tls-key or
-sign-key that is not a regular file or too large, a non-loopback -addr
without -token-file)
`

// usageError is a mistake in the command line (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitCode reports err on w and returns the exit status for it.
func exitCode(err error, w io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintln(w, "beliefserver:", err)
		fmt.Fprintln(w, "run beliefserver -h for the flags")
		return exitUsage
	}
	fmt.Fprintln(w, "beliefserver:", err)
	return exitError
}

// run serves until ctx is done. ready, if not nil, is called with the
// address once the listener is open.
func run(ctx context.Context, args []string, logOut io.Writer, ready func(addr string)) error {
	fl := flag.NewFlagSet("beliefserver", flag.ContinueOnError)
	fl.SetOutput(logOut)
	addr := fl.String("addr", "127.0.0.1:8080", "listen address")
	data := fl.String("data", "", "directory of session logs (empty: in memory)")
	allowForce := fl.Bool("allow-force", false, "allow forced termination (context.force = true)")
	dbSpec := fl.String("db", "", "session database: postgres://USER@HOST/DB or sqlite:PATH (instead of -data)")
	maxBody := fl.Int64("max-body", server.DefaultMaxBodyBytes, "largest request body in bytes")
	cacheSize := fl.Int("cache-size", belief.DefaultCacheSize, "idle sessions kept open")
	checkpointEvery := fl.Int("checkpoint-every", belief.DefaultCheckpointEvery, "audit events between checkpoints in a session's log (0: none)")
	var sign signFlags // -sign-key, -sign-every (sign.go)
	sign.add(fl)
	var sec securityFlags // -token-file, -insecure-no-auth, -tls-cert, -tls-key (security.go)
	sec.add(fl)
	limits := httpguard.Defaults()
	limits.AddFlags(fl)
	fl.Usage = func() {
		fmt.Fprintln(logOut, "usage: beliefserver [flags]")
		fl.PrintDefaults()
		fmt.Fprint(logOut, signHelp+securityHelp+exitHelp)
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fl.NArg() > 0 {
		return usagef("unexpected arguments %q", fl.Args())
	}
	if *data != "" && *dbSpec != "" {
		return usagef("-data and -db are mutually exclusive")
	}
	if _, port, err := net.SplitHostPort(*addr); err != nil {
		return usagef("-addr %q: %v", *addr, err)
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil && port != "" || n > 65535 {
		return usagef("-addr %q: the port must be a number up to 65535", *addr)
	}
	if err := errors.Join(limits.Validate(), checkCounts(*cacheSize, *checkpointEvery, *maxBody)); err != nil {
		return &usageError{err}
	}
	if _, err := sign.storage(nil, *data); err != nil {
		return err
	}
	if err := sec.setup(*addr); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(logOut, nil))

	var storage belief.Storage = belief.NewMemoryStorage()
	if *data != "" {
		fs, err := belief.NewFileStorage(*data, trace.FileOptions{})
		if err != nil {
			return err
		}
		defer fs.Close() // releases the directory's lock, after b.Close (deferred later, runs first)
		storage = fs
	}
	if *dbSpec != "" {
		db, st, err := openSQLStorage(ctx, *dbSpec)
		if err != nil {
			return err
		}
		defer db.Close() // after b.Close (deferred later, runs first)
		storage = st
	}
	storage, err := sign.storage(storage, *data)
	if err != nil {
		return err
	}
	b, err := belief.NewServer(ctx, storage, belief.WithPolicy(belief.Policy{AllowForce: *allowForce}),
		belief.WithCacheSize(*cacheSize), belief.WithCheckpointEvery(*checkpointEvery))
	if err != nil {
		return err
	}
	ids, err := storage.List(ctx) // sessions open on first use; this only counts them
	if err != nil {
		return err
	}
	defer b.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs, gl := httpguard.New(ln, server.New(b, append(sec.options(), server.WithLogger(logger), server.WithMaxBodyBytes(*maxBody))...), limits)
	served := make(chan error, 1)
	if sec.tlsConfig != nil {
		hs.TLSConfig = sec.tlsConfig
		go func() { served <- hs.ServeTLS(gl, "", "") }()
	} else {
		go func() { served <- hs.Serve(gl) }()
	}
	logger.Info("listening", "addr", ln.Addr().String(), "data", *data, "allow_force", *allowForce,
		"sessions_recovered", len(ids), "auth", sec.authorized, "tls", sec.tlsConfig != nil)
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// checkCounts refuses what the belief server would otherwise read as
// something else: -cache-size below 1 (it would keep one), a negative
// -checkpoint-every (it would write none) and a -max-body below 1.
func checkCounts(cacheSize, checkpointEvery int, maxBody int64) error {
	var errs []error
	if cacheSize < 1 {
		errs = append(errs, fmt.Errorf("-cache-size must be at least 1, not %d", cacheSize))
	}
	if checkpointEvery < 0 {
		errs = append(errs, fmt.Errorf("-checkpoint-every must not be negative (0: no checkpoints), not %d", checkpointEvery))
	}
	if maxBody < 1 {
		errs = append(errs, fmt.Errorf("-max-body must be positive, not %d", maxBody))
	}
	return errors.Join(errs...)
}

// openSQLStorage opens the session storage named by a -db value:
// postgres://... (several servers may share it) or sqlite:PATH (one
// machine).
func openSQLStorage(ctx context.Context, spec string) (*sql.DB, *sqlstorage.Storage, error) {
	var driver, dsn string
	var dialect sqlstore.Dialect
	switch {
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		driver, dsn, dialect = "pgx", spec, sqlstore.Postgres
	case strings.HasPrefix(spec, "sqlite:") && len(spec) > len("sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		driver, dialect = "sqlite", sqlstore.SQLite
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	default:
		return nil, nil, usagef("-db %q: want postgres://... or sqlite:PATH", spec)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxIdleConns(16) // database/sql keeps 2 by default; PostgreSQL forks per new connection
	st, err := sqlstorage.Open(ctx, db, dialect)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("-db: %w", err)
	}
	return db, st, nil
}
