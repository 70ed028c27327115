package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/verity-go/verity/trace"
)

func isNotLog(err error) bool     { return errors.Is(err, trace.ErrNotLog) }
func isTornTail(err error) bool   { return errors.Is(err, trace.ErrTornTail) }
func isTruncated(err error) bool  { return errors.Is(err, trace.ErrTruncated) }
func isChainBreak(err error) bool { return errors.Is(err, trace.ErrChainBreak) }
func isCorrupt(err error) bool    { return errors.Is(err, trace.ErrCorrupt) }

// badEntry names the first entry the library found wrong, from its typed
// errors.
func badEntry(err error) (uint64, bool) {
	var (
		torn    *trace.TornTailError
		corrupt *trace.CorruptRecordError
		brk     *trace.ChainBreakError
		notLog  *trace.NotLogError
	)
	switch {
	case errors.As(err, &torn):
		return torn.Index, true
	case errors.As(err, &corrupt):
		return corrupt.Index, true
	case errors.As(err, &brk):
		return brk.Index, true
	case errors.As(err, &notLog):
		return 0, true
	}
	return 0, false
}

// problem says in a few words what kind of failure err is.
func problem(err error) string {
	switch exitCode(err) {
	case exitTornTail:
		return "torn tail"
	case exitCorrupt:
		return "corrupt"
	case exitChainBreak:
		return "chain break"
	case exitNotExtends:
		return "does not extend the kept head"
	case exitNotLog:
		return "not a log"
	case exitReplay:
		return "replay disagrees"
	}
	return "error"
}

// ParseHead reads a kept head in the form `verity head` prints and
// trace.Head.String writes: SEQ:HASH, the sequence number of the last
// entry (decimal, no sign, no leading zero; the log's size minus one) and
// its hash (64 lower-case hex digits). It returns the trace.Head of the
// log that ends there (Size SEQ+1). An empty log has no head to keep.
func ParseHead(s string) (trace.Head, error) {
	h, err := trace.ParseHead(s)
	if err != nil {
		return trace.Head{}, errors.New(strings.TrimPrefix(err.Error(), trace.ErrMalformed.Error()+": "))
	}
	if h.Size == 0 {
		return trace.Head{}, fmt.Errorf("head %q: an empty log has no head to keep; want SEQ:HASH", s)
	}
	return h, nil
}

// FormatHead writes h as SEQ:HASH (trace.Head.String); the head of an
// empty log has no entry to name and is written as "".
func FormatHead(h trace.Head) string {
	if h.Size == 0 {
		return ""
	}
	return h.String()
}

// parseFlags parses flags and positional arguments in any order and
// returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, err // -h: the usage, exit 0
		} else if err != nil {
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// oneSource parses the single SRC argument of a command.
func oneSource(name string, pos []string) (Source, error) {
	if len(pos) != 1 {
		return Source{}, usagef("%s takes one SRC, got %d arguments", name, len(pos))
	}
	src, err := ParseSource(pos[0])
	if err != nil {
		return Source{}, &usageError{err.Error()}
	}
	return src, nil
}

// headFlag is a --head SEQ:HASH flag.
type headFlag struct {
	head trace.Head
	set  bool
}

func (f *headFlag) String() string { return FormatHead(f.head) }
func (f *headFlag) Set(s string) error {
	h, err := ParseHead(s)
	if err != nil {
		return err
	}
	f.head, f.set = h, true
	return nil
}

func cmdVerify(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	var kept headFlag
	fs.Var(&kept, "head", "a head kept elsewhere, SEQ:HASH; the log must extend it")
	var cpf checkpointFlags
	cpf.add(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		if kept.set || cpf.file != "" {
			return usagef("verify: --head and -checkpoint are for one log, not %d", len(pos))
		}
		sources, err := parseSources("verify", pos)
		if err != nil {
			return err
		}
		return verifyMany(ctx, e, sources)
	}
	src, err := oneSource("verify", pos)
	if err != nil {
		return err
	}
	if kept.set && cpf.file != "" {
		return usagef("verify takes --head or -checkpoint, not both")
	}
	signed, v, ok, err := cpf.head()
	if isBadCheckpoint(err) {
		fmt.Fprintf(e.stdout, "result   checkpoint does not verify: %v\n", err)
	}
	if err != nil {
		return err
	}
	if ok {
		fmt.Fprintf(e.stdout, "checkpoint %s: %s, %d entries, signed by %s+%08x\n", cpf.file, signed.Origin, signed.Size, v.Name(), v.KeyHash())
		kept = headFlag{head: signed.Head(), set: true}
	}
	if !src.IsFile() && !src.HasLog {
		o, err := openLog(ctx, e, src)
		if err == nil {
			o.close()
		}
		if errors.Is(err, errListed) {
			return usagef("verify needs one log: name it as %s#LOG", src)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "source   %s\n", src)
	res := verifySource(ctx, e, src, kept)
	fmt.Fprintf(e.stdout, "entries  %d verified\n", res.Head.Size)
	if res.Head.Size > 0 && res.Err != nil {
		fmt.Fprintf(e.stdout, "head     %s  (the last entry that verified)\n", FormatHead(res.Head))
	} else if res.Head.Size > 0 {
		fmt.Fprintf(e.stdout, "head     %s\n", FormatHead(res.Head))
	}
	if kept.set {
		status := "extended"
		if isTruncated(res.Err) {
			status = "NOT extended"
		} else if res.Err != nil {
			status = "not checked"
		}
		fmt.Fprintf(e.stdout, "kept     %s %s\n", FormatHead(kept.head), status)
	}
	if res.Err != nil {
		fmt.Fprintf(e.stdout, "result   %s: %v\n", problem(res.Err), res.Err)
		if isTornTail(res.Err) {
			fmt.Fprintf(e.stdout, "repair   verity repair %s  (cuts the torn record off, keeping its bytes in a side file)\n", src.Path)
		}
		return res.Err
	}
	fmt.Fprintln(e.stdout, "result   ok")
	return nil
}

// verification is what verifying a source found: the head of the verified
// prefix and the first problem, if any.
type verification struct {
	Head trace.Head
	Err  error
}

// verifySource opens src and streams every entry through trace's
// verifier (against the kept head when one is set), drawing a progress
// bar when stderr is a terminal.
func verifySource(ctx context.Context, e *env, src Source, kept headFlag) verification {
	o, err := openLog(ctx, e, src)
	if err != nil {
		// The head of the entries that verified, before the damage: the
		// one `verity repair` keeps for a torn tail.
		var torn *trace.TornTailError
		var corrupt *trace.CorruptRecordError
		var brk *trace.ChainBreakError
		v := verification{Err: err}
		switch {
		case errors.As(err, &torn):
			v.Head = torn.Head
		case errors.As(err, &corrupt):
			v.Head = corrupt.Head
		case errors.As(err, &brk):
			v.Head = brk.Head
		}
		return v
	}
	defer o.close()
	st := withProgress(ctx, e, o.store, "verifying")
	if kept.set {
		h, err := trace.VerifyStoreAgainst(ctx, st, kept.head)
		if isTruncated(err) {
			if serr := sizeForSeq(ctx, o.store, kept.head); serr != nil {
				err = serr
			}
		}
		return verification{h, err}
	}
	h, err := trace.VerifyStore(ctx, st)
	return verification{h, err}
}

// sizeForSeq explains a kept head the log does not extend when its hash is
// that of the entry before the one it names: the number was written as a
// size (trace.Head's Size) where a head has the last entry's sequence
// number. That is a mistake in the command line (a usage error), not a
// log that was cut or changed.
func sizeForSeq(ctx context.Context, st trace.Store, kept trace.Head) error {
	if kept.Size < 2 {
		return nil
	}
	for e, err := range st.Entries(ctx, kept.Size-2) {
		if err != nil || e.Hash != kept.Hash {
			return nil
		}
		return usagef("--head %s: %s is the hash of entry %d, not of entry %d: a head names its last entry's sequence number, the log's size minus one; keep heads as `verity head` prints them (here %s)",
			kept, kept.Hash, e.Seq, e.Seq+1, trace.Head{Size: e.Seq + 1, Hash: e.Hash})
	}
	return nil
}

// progressStore is a trace.Store whose Entries draws a progress bar on a
// terminal.
type progressStore struct {
	trace.Store
	bar *progress
}

// withProgress wraps st so that reading it draws a progress bar on stderr,
// only when stderr is a terminal.
func withProgress(ctx context.Context, e *env, st trace.Store, label string) trace.Store {
	if !e.tty {
		return st
	}
	h, err := st.Head(ctx)
	if err != nil || h.Size == 0 {
		return st
	}
	return &progressStore{st, &progress{w: e.stderr, label: label, total: h.Size}}
}

func (p *progressStore) Entries(ctx context.Context, from uint64) iter.Seq2[trace.Entry, error] {
	return func(yield func(trace.Entry, error) bool) {
		defer p.bar.done()
		for e, err := range p.Store.Entries(ctx, from) {
			if err == nil {
				p.bar.set(e.Seq + 1)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// progress is a one-line progress bar, redrawn at most ten times a second.
type progress struct {
	w     io.Writer
	label string
	total uint64
	last  time.Time
	drawn bool
}

func (p *progress) set(n uint64) {
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond || n == p.total {
		p.last = now
		p.draw(n)
	}
}

func (p *progress) draw(n uint64) {
	const width = 30
	filled := int(n * width / p.total)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %d/%d", p.label,
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), n*100/p.total, n, p.total)
	p.drawn = true
}

// done clears the bar's line.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func cmdHead(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("head", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the head as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	src, err := oneSource("head", pos)
	if err != nil {
		return err
	}
	res := verifySource(ctx, e, src, headFlag{})
	if errors.Is(res.Err, errListed) {
		return nil
	}
	if res.Err != nil {
		return res.Err
	}
	h := res.Head
	if *asJSON {
		out := map[string]any{"entries": h.Size, "head": FormatHead(h), "hash": h.Hash.String(), "seq": nil}
		if h.Size > 0 {
			out["seq"] = h.Size - 1
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	if h.Size == 0 {
		fmt.Fprintln(e.stderr, "verity head: the log is empty: there is no head to keep yet")
		return nil
	}
	fmt.Fprintln(e.stdout, FormatHead(h))
	return nil
}

func cmdRepair(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("repair", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	src, err := oneSource("repair", pos)
	if err != nil {
		return err
	}
	if !src.IsFile() {
		return usagef("repair works on log files only: a database log has no torn tail")
	}
	res, err := trace.RepairFile(src.Path)
	if err != nil {
		return err
	}
	if res.CutBytes == 0 {
		fmt.Fprintf(e.stdout, "nothing to repair: %d entries verify\n", res.Entries)
		return nil
	}
	fmt.Fprintf(e.stdout, "cut %d bytes of a torn final record off %s; %d entries verify\nthe cut bytes are in %s\n",
		res.CutBytes, src.Path, res.Entries, res.SideFile)
	return nil
}
