package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/verity-go/verity/trace"
)

// errStop ends a walk early without an error.
var errStop = errors.New("stop")

// walk opens src and calls fn for every entry, in order, each verified
// (trace.Verifier) before fn sees it. A database source without a log id
// lists its logs instead and returns errListed.
func walk(ctx context.Context, e *env, src Source, fn func(trace.Entry) error) error {
	o, err := openLog(ctx, e, src)
	if err != nil {
		return err
	}
	defer o.close()
	var v trace.Verifier
	for entry, err := range o.store.Entries(ctx, 0) {
		if err != nil {
			return err
		}
		if err := v.Add(entry); err != nil {
			return err
		}
		if err := fn(entry); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
	}
	return nil
}

// ignoreListed turns errListed (the logs were listed) into success.
func ignoreListed(err error) error {
	if errors.Is(err, errListed) {
		return nil
	}
	return err
}

// kindMatches reports whether kind is filter or in the family filter
// names: "kernel" and "kernel." match every kernel.* kind.
func kindMatches(kind, filter string) bool {
	if filter == "" || kind == filter {
		return true
	}
	return strings.HasPrefix(kind, strings.TrimSuffix(filter, ".")+".")
}

// inspectLine is one entry in inspect's NDJSON output.
type inspectLine struct {
	Seq     uint64          `json:"seq"`
	Time    string          `json:"time"`
	Kind    string          `json:"kind"`
	Hash    trace.Hash      `json:"hash"`
	Summary string          `json:"summary"`
	Payload json.RawMessage `json:"payload"`
	// Log names the log of the entry when inspect reads several.
	Log string `json:"log,omitempty"`
}

func cmdInspect(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	kind := fs.String("kind", "", "only entries of this kind, or of this family (kernel, belief, claims, speculative)")
	from := fs.Uint64("from", 0, "first sequence number")
	to := fs.Uint64("to", math.MaxUint64, "last sequence number")
	asJSON := fs.Bool("json", false, "one JSON object per line (NDJSON), with the payload")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	several := len(pos) > 1
	show := func(src Source, entry trace.Entry) error {
		if entry.Seq > *to {
			return errStop
		}
		if entry.Seq < *from || !kindMatches(entry.Kind, *kind) {
			return nil
		}
		if *asJSON {
			line := inspectLine{Seq: entry.Seq, Time: trace.FormatTime(entry.Time), Kind: entry.Kind, Hash: entry.Hash, Summary: summarize(entry), Payload: entry.Payload}
			if several {
				line.Log = src.String()
			}
			return enc.Encode(line)
		}
		if several {
			_, err := fmt.Fprintf(w, "%s  %6d  %s  %-22s %s\n", src, entry.Seq, trace.FormatTime(entry.Time), entry.Kind, summarize(entry))
			return err
		}
		_, err := fmt.Fprintf(w, "%6d  %s  %-22s %s\n", entry.Seq, trace.FormatTime(entry.Time), entry.Kind, summarize(entry))
		return err
	}
	if several {
		sources, err := parseSources("inspect", pos)
		if err != nil {
			return err
		}
		// Entries past -to stop a log's listing, not its verification.
		seen := map[string]bool{}
		r := relate(ctx, e, sources, func(src Source, entry trace.Entry) error {
			if seen[src.String()] {
				return nil
			}
			if err := show(src, entry); err == errStop {
				seen[src.String()] = true
			} else if err != nil {
				return err
			}
			return nil
		})
		if *asJSON {
			if err := enc.Encode(struct {
				Relation *relation `json:"relation"`
			}{r}); err != nil {
				return err
			}
		} else {
			r.print(w)
		}
		return r.err()
	}
	src, err := oneSource("inspect", pos)
	if err != nil {
		return err
	}
	err = walk(ctx, e, src, func(entry trace.Entry) error { return show(src, entry) })
	return ignoreListed(err)
}

func cmdExport(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	format := fs.String("format", "json", "json (one array) or ndjson (one entry per line)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *format != "json" && *format != "ndjson" {
		return usagef("export: --format must be json or ndjson, not %q", *format)
	}
	src, err := oneSource("export", pos)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	n := 0
	err = walk(ctx, e, src, func(entry trace.Entry) error {
		b, err := entry.MarshalJSON()
		if err != nil {
			return err
		}
		switch {
		case *format == "ndjson":
		case n == 0:
			w.WriteString("[\n")
		default:
			w.WriteString(",\n")
		}
		n++
		w.Write(b)
		if *format == "ndjson" {
			w.WriteByte('\n')
		}
		return nil
	})
	if errors.Is(err, errListed) {
		return nil
	}
	if *format == "json" && err == nil {
		if n == 0 {
			w.WriteString("[")
		}
		w.WriteString("\n]\n")
	}
	return err
}
