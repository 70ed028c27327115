package main

import (
	"context"
	"embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

//go:embed web
var webFiles embed.FS

// contentSecurityPolicy lets the page load nothing but its own origin's
// files: no inline script or style, no other host, no frames.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// maxChartPoints bounds the points of one chart series sent to the page.
const maxChartPoints = 1500

func cmdView(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("view", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve the page on (a loopback address unless --public)")
	public := fs.Bool("public", false, "allow an --addr that is not loopback: anyone who reaches it reads the whole log")
	var kept headFlag
	fs.Var(&kept, "head", "a head kept elsewhere, SEQ:HASH; the page shows whether the log extends it")
	limits := addLimitFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	src, err := oneSource("view", pos)
	if err != nil {
		return err
	}
	if err := limits.Validate(); err != nil {
		return &usageError{err.Error()}
	}
	if err := checkViewAddr(e, *addr, *public); err != nil {
		return err
	}
	start := time.Now()
	ix, err := buildIndex(ctx, e, src, kept)
	if err != nil {
		return ignoreListed(err)
	}
	defer ix.close()
	ix.status.IndexMillis = time.Since(start).Milliseconds()
	hs, laddr, err := startServer(*addr, *limits, func(a string) http.Handler { return ix.handler(a, e.requestLog) })
	if err != nil {
		return err
	}
	defer hs.Close()
	url := "http://" + laddr.String() + "/"
	fmt.Fprintf(e.stderr, "verity view: %d entries of %s indexed in %s; serving %s\n", len(ix.rows), src, time.Since(start).Round(time.Millisecond), url)
	if e.serve != nil {
		return e.serve(url)
	}
	<-ctx.Done()
	return nil
}

// row is one entry in the timeline.
type row struct {
	Seq     uint64 `json:"seq"`
	Time    string `json:"time"`
	Kind    string `json:"kind"`
	Hash    string `json:"hash"`
	Summary string `json:"summary"`
	// State is "ok", "bad" (the first entry the library refuses) or
	// "unverified" (read after the bad one, shown but not trusted).
	State string `json:"state"`
	text  string // lower-case haystack for search
}

// status is the chain's verification status as the page shows it.
type status struct {
	Source      string         `json:"source"`
	Entries     uint64         `json:"entries"` // verified
	Rows        int            `json:"rows"`
	Head        string         `json:"head"`
	OK          bool           `json:"ok"`
	Problem     string         `json:"problem,omitempty"`
	Error       string         `json:"error,omitempty"`
	BadSeq      *uint64        `json:"bad_seq,omitempty"`
	Kept        string         `json:"kept,omitempty"`
	KeptOK      *bool          `json:"kept_ok,omitempty"`
	KeptError   string         `json:"kept_error,omitempty"`
	ReplayError string         `json:"replay_error,omitempty"`
	Kinds       map[string]int `json:"kinds"`
	IndexMillis int64          `json:"index_ms"`
}

// budgetSeries is one kernel session's budget over time: points of
// [seq, gross, refunded, net, limit] in units.
type budgetSeries struct {
	Session string       `json:"session"`
	Points  [][5]float64 `json:"points"`
}

// beliefSeries is one belief session's survivors over time: points of
// [seq, survivors].
type beliefSeries struct {
	Session  string       `json:"session"`
	Declared int          `json:"declared"`
	Points   [][2]float64 `json:"points"`
}

// claimRow is one claims decision with its approvals.
type claimRow struct {
	Seq       uint64            `json:"seq"`
	Time      string            `json:"time"`
	Kind      string            `json:"kind"`
	Bundle    string            `json:"bundle"`
	Actor     string            `json:"actor"`
	Decision  string            `json:"decision"`
	Reason    string            `json:"reason"`
	Required  []string          `json:"required"`
	Approvals []claims.Approval `json:"approvals"`
}

// index is everything the page shows, built in one pass over the log.
type index struct {
	rows   []row
	status status
	budget []*budgetSeries
	belief []*beliefSeries
	claims []claimRow
	calls  *calls      // the tool calls a gate decided
	store  trace.Store // where payloads are read from on demand; nil if none
	tail   *row        // the record a log file's reader refused, shown after the entries before it
	close  func() error
}

// buildIndex reads src once: every entry becomes a timeline row, the
// verifier marks the first bad one, and the kernel, belief and claims
// entries feed the charts and the decisions table.
func buildIndex(ctx context.Context, e *env, src Source, kept headFlag) (*index, error) {
	ix := &index{close: func() error { return nil }, status: status{Source: src.String(), Kinds: map[string]int{}}, calls: newCalls()}
	o, err := openLog(ctx, e, src)
	if errors.Is(err, errListed) {
		return nil, err
	}
	if err != nil {
		if o, err = ix.openVerifiedPrefix(src, err); err != nil {
			return nil, err
		}
	}
	if o != nil {
		ix.store, ix.close = o.store, o.close
		ix.read(ctx, e)
	}
	if ix.tail != nil {
		ix.rows = append(ix.rows, *ix.tail)
	} else if ix.status.BadSeq == nil {
		ix.status.OK = true
	}
	if ix.status.OK && kept.set {
		ix.status.Kept = FormatHead(kept.head)
		_, err := trace.VerifyStoreAgainst(ctx, ix.store, kept.head)
		ok := err == nil
		ix.status.KeptOK = &ok
		if err != nil {
			ix.status.KeptError = err.Error()
			ix.status.OK = false
			ix.status.Problem = problem(err)
			ix.status.Error = err.Error()
		}
	}
	ix.status.Rows = len(ix.rows)
	return ix, nil
}

// openVerifiedPrefix handles a log file trace.OpenFile refused: the
// status records the library's error, and the entries before the bad
// record, which verified, are read from a copy of the file cut there. The
// bad entry itself is shown as a row carrying the error.
func (ix *index) openVerifiedPrefix(src Source, openErr error) (*opened, error) {
	bad, ok := badEntry(openErr)
	if !src.IsFile() || !ok {
		return nil, openErr
	}
	ix.fail(openErr, bad)
	ix.tail = &row{Seq: bad, Kind: "(unreadable)", Summary: openErr.Error(), State: "bad"}
	if bad == 0 {
		return nil, nil
	}
	cut, err := recordOffset(src.Path, bad)
	if err != nil {
		return nil, nil // nothing more can be shown than the error
	}
	dir, err := os.MkdirTemp("", "verity-view-")
	if err != nil {
		return nil, err
	}
	cleanup := func() error { return os.RemoveAll(dir) }
	prefix := filepath.Join(dir, "prefix.trace")
	if err := copyPrefix(src.Path, prefix, cut); err != nil {
		cleanup()
		return nil, err
	}
	f, err := trace.OpenFileReadOnly(prefix)
	if err != nil {
		cleanup()
		return nil, nil
	}
	return &opened{store: f, close: func() error { return errors.Join(f.Close(), cleanup()) }}, nil
}

// recordOffset returns the offset of record index in a log file by
// skipping the length prefixes of the records before it (trace/FORMAT.md
// §4: an 8-byte magic, then records of an 8-byte header and a body of the
// header's length). The records before index verified when the file was
// opened, so their lengths are sound.
func recordOffset(path string, index uint64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	off := int64(8)
	var hdr [4]byte
	for i := uint64(0); i < index; i++ {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return 0, err
		}
		off += 8 + int64(binary.BigEndian.Uint32(hdr[:]))
	}
	return off, nil
}

func copyPrefix(from, to string, n int64) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, in, n); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fail records the library's error err, found at entry bad, in the status.
func (ix *index) fail(err error, bad uint64) {
	ix.status.OK = false
	ix.status.Problem = problem(err)
	ix.status.Error = err.Error()
	ix.status.BadSeq = &bad
}

// read streams the log into the index. The first entry the verifier
// refuses is marked bad and the status records the library's error; the
// entries after it are shown as unverified.
func (ix *index) read(ctx context.Context, e *env) {
	failed := false
	var v trace.Verifier
	budgets := map[string]*budgetSeries{}
	beliefs := map[string]*beliefSeries{}
	states := map[string]belief.State{}
	st := withProgress(ctx, e, ix.store, "indexing")
	for entry, err := range st.Entries(ctx, 0) {
		if err != nil {
			if !failed {
				ix.fail(err, v.Head().Size)
				ix.rows = append(ix.rows, row{Seq: v.Head().Size, Kind: "(unreadable)", Summary: err.Error(), State: "bad"})
			}
			break
		}
		r := row{Seq: entry.Seq, Time: trace.FormatTime(entry.Time), Kind: entry.Kind, Hash: entry.Hash.String(), State: "ok"}
		if failed {
			r.State = "unverified"
		} else if err := v.Add(entry); err != nil {
			failed = true
			ix.fail(err, entry.Seq)
			r.State = "bad"
		}
		var decoded any
		r.Summary, decoded = describe(entry)
		r.text = strings.ToLower(fmt.Sprintf("%d %s %s %s", r.Seq, r.Kind, r.Summary, r.Hash))
		ix.rows = append(ix.rows, r)
		ix.status.Kinds[entry.Kind]++
		if r.State == "ok" && decoded != nil {
			ix.chart(entry, decoded, budgets, beliefs, states)
			ix.calls.add(entry, decoded)
		}
	}
	ix.status.Entries = v.Head().Size
	ix.status.Head = FormatHead(v.Head())
	for _, s := range ix.budget {
		s.Points = thin(s.Points)
	}
	for _, s := range ix.belief {
		s.Points = thin(s.Points)
	}
}

// chart adds a verified entry, decoded by its package, to the charts and
// the claims table.
func (ix *index) chart(e trace.Entry, decoded any, budgets map[string]*budgetSeries, beliefs map[string]*beliefSeries, states map[string]belief.State) {
	switch x := decoded.(type) {
	case kernel.Entry:
		var id string
		var b kernel.BudgetSnapshot
		switch v := x.(type) {
		case kernel.StartEntry:
			id, b = v.Session, kernel.BudgetSnapshot{Limit: v.Budget}
		case kernel.ExecuteEntry:
			id, b = v.Session, v.Budget
		case kernel.RejectEntry:
			id, b = v.Session, v.Budget
		case kernel.RollbackEntry:
			id, b = v.Session, v.Budget
		case kernel.ReserveEntry:
			id, b = v.Session, v.Budget
		case kernel.SettleEntry:
			id, b = v.Session, v.Budget
		case kernel.RefundEntry:
			id, b = v.Session, v.Budget
		default:
			return
		}
		s := budgets[id]
		if s == nil {
			s = &budgetSeries{Session: id}
			budgets[id] = s
			ix.budget = append(ix.budget, s)
		}
		s.Points = append(s.Points, [5]float64{float64(e.Seq), units(b.Gross), units(b.Refunded), units(b.Gross - b.Refunded), units(b.Limit)})
	case belief.AuditEntry:
		a := x
		next, err := states[a.SessionID].Apply(a)
		if err != nil {
			if ix.status.ReplayError == "" {
				ix.status.ReplayError = fmt.Sprintf("entry %d: %v", e.Seq, err)
			}
			return
		}
		states[a.SessionID] = next
		s := beliefs[a.SessionID]
		if s == nil {
			s = &beliefSeries{Session: a.SessionID, Declared: len(next.Declared())}
			beliefs[a.SessionID] = s
			ix.belief = append(ix.belief, s)
		}
		s.Points = append(s.Points, [2]float64{float64(e.Seq), float64(next.NSurvivors())})
	case claims.Record:
		rec := x
		b := rec.Bundle
		ix.claims = append(ix.claims, claimRow{Seq: e.Seq, Time: trace.FormatTime(e.Time), Kind: e.Kind, Bundle: b.ID,
			Actor: rec.Actor, Decision: string(b.Decision), Reason: b.Reason, Required: b.RequiredApprovals, Approvals: b.AuditTrail.HumanApprovals})
	}
}

// units converts a cost to units for the chart.
func units(c kernel.Cost) float64 { return float64(c) / float64(kernel.Unit) }

// thin keeps at most maxChartPoints points of a series, evenly spaced,
// always with the first and the last.
func thin[P any](ps []P) []P {
	if len(ps) <= maxChartPoints {
		return ps
	}
	out := make([]P, 0, maxChartPoints)
	step := float64(len(ps)-1) / float64(maxChartPoints-1)
	for i := range maxChartPoints {
		out = append(out, ps[int(float64(i)*step+0.5)])
	}
	return out
}

// handler serves the page and its JSON endpoints. Every response carries
// the Content-Security-Policy; a request whose Host is not the address
// served (a DNS rebinding attempt) is refused.
func (ix *index) handler(addr string, logReq func(*http.Request)) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFiles, "web")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, ix.status) })
	mux.HandleFunc("GET /api/entries", ix.serveEntries)
	mux.HandleFunc("GET /api/entry", ix.serveEntry)
	mux.HandleFunc("GET /api/budget", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, ix.budget) })
	mux.HandleFunc("GET /api/belief", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, ix.belief) })
	mux.HandleFunc("GET /api/claims", func(w http.ResponseWriter, r *http.Request) {
		off, lim := paging(r)
		writeJSON(w, map[string]any{"total": len(ix.claims), "offset": off, "rows": window(ix.claims, off, lim)})
	})
	mux.HandleFunc("GET /api/calls", func(w http.ResponseWriter, r *http.Request) {
		off, lim := paging(r)
		writeJSON(w, map[string]any{"total": len(ix.calls.rows), "offset": off, "rows": window(ix.calls.rows, off, lim), "counts": ix.calls.counts})
	})
	_, port, _ := net.SplitHostPort(addr)
	allowed := map[string]bool{addr: true, "localhost:" + port: true}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if logReq != nil {
			logReq(r)
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if !allowed[r.Host] {
			http.Error(w, "unexpected Host", http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// paging reads offset and limit (1 to 500, default 100).
func paging(r *http.Request) (offset, limit int) {
	offset, _ = strconv.Atoi(r.URL.Query().Get("offset"))
	limit, _ = strconv.Atoi(r.URL.Query().Get("limit"))
	if offset < 0 {
		offset = 0
	}
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	return offset, limit
}

func window[T any](xs []T, offset, limit int) []T {
	if offset >= len(xs) {
		return []T{}
	}
	return xs[offset:min(len(xs), offset+limit)]
}

// serveEntries answers one page of the timeline: rows of the kinds asked
// for (families: kernel, belief, claims, speculative, other) whose text
// holds the search string, and the number of such rows.
func (ix *index) serveEntries(w http.ResponseWriter, r *http.Request) {
	off, lim := paging(r)
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	var families map[string]bool
	if k := r.URL.Query().Get("kinds"); r.URL.Query().Has("kinds") {
		families = map[string]bool{}
		for _, f := range strings.Split(k, ",") {
			families[f] = true
		}
	}
	rows := ix.rows
	if q != "" || families != nil {
		rows = nil
		for _, x := range ix.rows {
			if (families == nil || families[family(x.Kind)] || x.State == "bad") && strings.Contains(x.text, q) {
				rows = append(rows, x)
			}
		}
	}
	writeJSON(w, map[string]any{"total": len(rows), "offset": off, "rows": window(rows, off, lim)})
}

// family is the timeline filter an entry kind belongs to.
func family(kind string) string {
	for _, s := range summarizers {
		if strings.HasPrefix(kind, s.prefix) {
			return strings.TrimSuffix(s.prefix, ".")
		}
	}
	return "other"
}

// serveEntry answers one entry: its fields, its canonical payload and its
// JSON form (trace/FORMAT.md §5), read from the store.
func (ix *index) serveEntry(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.URL.Query().Get("seq"), 10, 64)
	if err != nil {
		http.Error(w, "seq: want a sequence number", http.StatusBadRequest)
		return
	}
	if seq < uint64(len(ix.rows)) && ix.rows[seq].Kind == "(unreadable)" {
		writeJSON(w, map[string]any{"seq": seq, "error": ix.rows[seq].Summary})
		return
	}
	if ix.store == nil {
		http.Error(w, "no such entry", http.StatusNotFound)
		return
	}
	for e, err := range ix.store.Entries(r.Context(), seq) {
		if err != nil {
			writeJSON(w, map[string]any{"seq": seq, "error": err.Error()})
			return
		}
		j, err := e.MarshalJSON()
		if err != nil {
			writeJSON(w, map[string]any{"seq": seq, "error": err.Error()})
			return
		}
		var st string
		if seq < uint64(len(ix.rows)) {
			st = ix.rows[seq].State
		}
		writeJSON(w, map[string]any{
			"seq": e.Seq, "kind": e.Kind, "time": trace.FormatTime(e.Time), "hash": e.Hash.String(), "prev": e.Prev.String(),
			"computed_hash": trace.EntryHash(e).String(), "payload": string(e.Payload), "entry": json.RawMessage(j),
			"summary": summarize(e), "state": st,
		})
		return
	}
	http.Error(w, "no such entry", http.StatusNotFound)
}
