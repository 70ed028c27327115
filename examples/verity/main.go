// Command verity checks, reads, replays and shows a Verity log: the tool
// an operator or an auditor holding a log reaches for.
//
// Build it from a clone of the repository (the module is not published):
//
//	go install ./examples/verity            # reads log files
//	go install -tags sql ./examples/verity  # and SQLite and PostgreSQL sources
//
//	verity verify  SRC [--head SEQ:HASH]        check the whole chain (and that it extends a kept head)
//	verity verify  SRC -checkpoint FILE -pubkey KEY [-origin O]
//	                                            ... and that it extends a signed checkpoint
//	verity keygen  -name NAME -out PREFIX       an Ed25519 checkpoint key: PREFIX.key (0600) and PREFIX.pub
//	verity checkpoint sign SRC -key PREFIX.key [-origin O] [-out FILE]
//	                                            sign the head (C2SP signed-note / tlog-checkpoint text)
//	verity head    SRC [--json]                 the head to keep: SEQ:HASH of the last entry
//	verity inspect SRC [--kind K] [--from N] [--to N] [--json]
//	verity verify  SRC SRC…   (and inspect SRC SRC…) several logs, each verified, then how they relate
//	                                            one line per entry with a summary of its payload (or NDJSON)
//	verity replay  SRC                          rebuild the kernel, belief and claims sessions; print their final state
//	verity export  SRC [--format json|ndjson]   the entries in trace/FORMAT.md's JSON form
//	verity repair  FILE                         cut a torn final record off a log file (the cut bytes are kept aside)
//	verity view    SRC [--addr 127.0.0.1:8080 [--public]] [--head SEQ:HASH]
//	                                            serve a page showing the log (a non-loopback
//	                                            --addr is refused, exit 2, unless --public)
//	verity policy  check POLICY [-tools FILE | -- UPSTREAM…] | test POLICY CASES
//	                                            lint a tool gate's policy against an MCP server's tools; run its test cases
//	verity pin     [-o pins.json] -- UPSTREAM… | check|approve -pins pins.json … -- UPSTREAM… | diff OLD NEW
//	                                            pin an MCP server's tool definitions; report drift; re-pin one
//	verity budget  show SRC -policy POLICY | show -db DB | grant … | reset …
//	                                            each caller's budget and period; an approver's grant or reset (verity budget -h)
//
// SRC is a log file (the path), a log in a SQLite database
// (sqlite:PATH#LOG) or in PostgreSQL (postgres://USER@HOST/DB?…#LOG). The
// log id follows the first '#'; a database source without one lists its
// logs, one id per line. The database sources need the build tag "sql",
// which compiles in the SQLite and PostgreSQL drivers.
//
// A head (SEQ:HASH) is the last entry's sequence number — the number of
// entries minus one — and its hash, as trace.Head.String writes it and
// trace.ParseHead reads it. A head written with the number of entries in
// its place (trace.Head's Size) is a usage error that says so, not a
// tamper alarm. On a torn, corrupt or broken log, verify prints the head
// of the last entry that verified: for a torn tail, the one `verity
// repair` keeps.
//
// Every command that reads a log verifies it as it reads (a log file is
// verified whole when it is opened): no entry is printed, exported,
// replayed or shown that is not part of a verified chain from entry 0.
//
// Exit codes:
//
//	0  ok: the log verifies (and extends the kept head, if one was given)
//	1  the command failed for another reason (a missing file, a database error, a log not found)
//	2  usage: unknown command or flag, malformed SRC or --head, a database without #LOG for verify
//	3  torn tail: the final record of a log file was cut short (a crash mid-append); `verity repair FILE` cuts it off
//	4  corrupt: a record or row that cannot be read, before the end of the log; never repaired
//	5  chain break: an entry that does not verify (changed, removed, reordered or forged); never repaired
//	6  the log does not extend the kept head: it is shorter than the head or its entry there has another hash
//	7  not a log: not a regular file (a FIFO, a device such as /dev/zero, a directory, a socket: refused
//	   without reading it), or a file that does not begin with the trace file magic
//	8  replay: the log verifies but disagrees with a replay of the sessions it records
//	9  checkpoint: the -checkpoint file is malformed, not signed by -pubkey, or for another origin
//	   (a log that does not extend a good checkpoint, such as a rewritten one, exits 6)
//
// verity pin reads no log and has verity policy's rule (verity pin -h): 0 written, no
// drift or no difference, 1 drift (check) or a difference (diff), 2 it could not run.
//
// verity policy reads no log and has one rule of its own (verity policy -h): 0 the
// policy is clean or every case passed, 1 check found problems or a case failed, 2 the
// check or test could not run (a usage error, or a policy, cases or tools file that is
// missing, unreadable, not a regular file, too large or invalid, or an upstream that
// does not list its tools).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
)

// Exit codes, documented above and in the README.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitTornTail   = 3
	exitCorrupt    = 4
	exitChainBreak = 5
	exitNotExtends = 6
	exitNotLog     = 7
	exitReplay     = 8
	exitCheckpoint = 9
)

// env is what a command runs against: its output streams and whether
// stderr is a terminal (the progress bar is drawn only then).
type env struct {
	stdout, stderr io.Writer
	tty            bool
	// serve, when set, is called by view with the listening server's
	// address instead of blocking until interrupted (tests use it).
	serve func(addr string) error
	// requestLog, when set, sees every request view serves (tests use it).
	requestLog func(*http.Request)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &env{stdout: os.Stdout, stderr: os.Stderr, tty: isTerminal(os.Stderr)}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

const usage = `usage: verity COMMAND SRC [flags]

commands:
  verify  SRC [--head SEQ:HASH]       check the whole chain (and that it extends a kept head)
  head    SRC [--json]                the head to keep (SEQ:HASH of the last entry)
  inspect SRC [--kind K] [--from N] [--to N] [--json]
  verify  SRC SRC... | inspect SRC SRC... [flags]   several logs (replicas each write their own):
                                      each verified on its own, then how they relate: each one's
                                      entries, head and time span; the time they overlap, the
                                      budgets and callers in several; a call or execution decided
                                      in two logs is a conflict (exit 1)
  replay  SRC                         rebuild the recorded sessions and print their final state
  export  SRC [--format json|ndjson]  entries in trace/FORMAT.md's JSON form
  repair  FILE                        cut a torn final record off a log file
  view    SRC [--addr 127.0.0.1:8080 [--public]] [--head SEQ:HASH]   (a non-loopback --addr needs --public)
          [--max-conns 256] [--conn-wait 1s] [--read-header-timeout 10s] [--read-timeout 30s]
          [--write-timeout 60s] [--idle-timeout 60s] [--max-header-bytes 65536]
  policy  check POLICY [-tools FILE | -- UPSTREAM...] | check -config GATEWAY | test POLICY CASES   (verity policy -h)
  pin     [-o pins.json] -- UPSTREAM... | check|approve -pins FILE ... -- UPSTREAM... | diff OLD NEW   (verity pin -h)
  budget  show SRC -policy POLICY | show -db DB | grant | reset   a tool gate's budgets (verity budget -h)
  verify  SRC -checkpoint FILE -pubkey KEY [-origin ORIGIN]   the log must extend a signed checkpoint
  keygen  -name NAME -out PREFIX      an Ed25519 checkpoint key: PREFIX.key (0600) and PREFIX.pub
  checkpoint sign SRC -key PREFIX.key [-origin ORIGIN] [-out FILE]   (verity checkpoint -h)

SRC: FILE | sqlite:PATH#LOG | postgres://USER@HOST/DB#LOG (without #LOG: list the logs;
     the database sources need a verity built with -tags sql)
SEQ:HASH: a head, the last entry's sequence number (the number of entries minus one) and its
     hash, as verity head prints it and trace.Head.String writes it
exit: 0 ok, 1 error, 2 usage, 3 torn tail, 4 corrupt, 5 chain break,
      6 does not extend the kept head or the signed checkpoint (a rewritten log),
      7 not a log (or not a regular file), 8 replay disagrees,
      9 the checkpoint does not verify (malformed, another key, a bad signature, another origin);
      verity policy: 0 clean, 1 problems found or a case failed, 2 usage or an input it cannot use;
      verity pin: 0 written or no drift, 1 drift or a difference, 2 usage or an input it cannot use
`

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmds := map[string]func(context.Context, *env, []string) error{
		"verify":  cmdVerify,
		"head":    cmdHead,
		"inspect": cmdInspect,
		"replay":  cmdReplay,
		"export":  cmdExport,
		"repair":  cmdRepair,
		"view":    cmdView,
		"policy":  cmdPolicy,
		"pin":     cmdPin,
		"budget":  cmdBudget, // budget.go
		// signed checkpoints (signing.go)
		"keygen":     cmdKeygen,
		"checkpoint": cmdCheckpoint,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "verity: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	err := cmd(ctx, e, args[1:])
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) { // COMMAND -h
		fmt.Fprint(e.stderr, usage)
		return exitOK
	}
	code := exitCode(err)
	fmt.Fprintf(e.stderr, "verity %s: %v\n", args[0], err)
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "\n%s", usage)
	}
	return code
}

// exitCode maps an error to the documented exit code. The trace package's
// typed errors decide; a *NotLogError also matches ErrCorrupt, so it is
// looked for first.
func exitCode(err error) int {
	var (
		ue *usageError
		ie *inputError
		re *replayError
	)
	switch {
	case errors.As(err, &ue), errors.As(err, &ie):
		return exitUsage
	case isNotLog(err):
		return exitNotLog
	case isTornTail(err):
		return exitTornTail
	case isTruncated(err):
		return exitNotExtends
	case isChainBreak(err):
		return exitChainBreak
	case isCorrupt(err):
		return exitCorrupt
	case errors.As(err, &re):
		return exitReplay
	case isBadCheckpoint(err):
		return exitCheckpoint
	}
	return exitError
}
