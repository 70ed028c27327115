package speculative

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/verity-go/verity/trace"
)

// ErrMismatch: what a backend holds disagrees with what the Steward's log
// says was persisted (see Compare).
var ErrMismatch = errors.New(prefix + "backend disagrees with the log")

// MismatchError names the first disagreement Compare found.
type MismatchError struct {
	// What is the value that differs: `evidence 2 of claim "c1"`,
	// `status of claim "c1"`, `hypothesis 0 of session "s1"`.
	What string
	// Entry is the sequence number of the log entry that last set that
	// value, or of the entry the log stops on; 0 with Log "none" when the
	// log never set it.
	Entry uint64
	// Log and Backend say what each holds.
	Log, Backend string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: %s: the log (entry %d) says %s, the backend holds %s", ErrMismatch, e.What, e.Entry, e.Log, e.Backend)
}

func (e *MismatchError) Unwrap() error { return ErrMismatch }

// started is a write intent other than a status change that the log
// shows as made but not finished: neither persisted nor rejected, or a
// hypothesis persisted whose proposition link has no outcome yet.
type started struct {
	at       uint64 // the IntentEntry's sequence number
	entry    IntentEntry
	approved bool
	linking  bool // the hypothesis is persisted; its link is not decided
}

// fact is a value the log says the backend holds, and the entry that set it.
type fact struct {
	at     uint64
	digest trace.Hash
}

type hypothesisFact struct {
	at      uint64
	id      string
	claimID string
	digest  trace.Hash
	linked  bool
}

type statusFact struct {
	at       uint64
	status   Status
	evidence []trace.Hash
}

// history is what a Steward's log says: the status intents still open,
// the writes a crash interrupted and the state the backend must hold.
// Replaying is linear in the log; open and started hold unfinished
// intents only.
type history struct {
	last       uint64 // sequence number of the last entry read
	n          uint64 // intents opened, for their order
	open       map[string]*intent
	started    map[string]*started
	claims     []string // in order of first mention
	sessions   []string
	seen       map[string]bool // "c" + claim id, "s" + session id, "e" + evidence digest
	evidence   map[string][]fact
	status     map[string]statusFact
	hypotheses map[string][]hypothesisFact
}

func newHistory() *history {
	return &history{open: map[string]*intent{}, started: map[string]*started{}, seen: map[string]bool{},
		evidence: map[string][]fact{}, status: map[string]statusFact{}, hypotheses: map[string][]hypothesisFact{}}
}

// replay reads every speculative entry of log (entries of other kinds are
// skipped) into a history. An entry that does not decode is an error.
func replay(ctx context.Context, log *trace.Log) (*history, error) {
	h := newHistory()
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return nil, wrap("reading the log", err)
		}
		h.last = e.Seq
		if !strings.HasPrefix(e.Kind, "speculative.") {
			continue
		}
		d, err := DecodeEntry(e)
		if err != nil {
			return nil, wrap(fmt.Sprintf("log entry %d", e.Seq), err)
		}
		h.apply(e.Seq, d)
	}
	return h, nil
}

func (h *history) mention(kind, id string) {
	if id == "" || h.seen[kind+id] {
		return
	}
	h.seen[kind+id] = true
	if kind == "c" {
		h.claims = append(h.claims, id)
	} else {
		h.sessions = append(h.sessions, id)
	}
}

// apply folds one entry, at sequence number at, into the history.
func (h *history) apply(at uint64, d Entry) {
	switch e := d.(type) {
	case IntentEntry:
		h.mention("c", e.ClaimID)
		h.mention("s", e.SessionID)
		if e.Write == WriteKindStatus {
			h.n++
			in := &intent{id: e.Intent, claimID: e.ClaimID, to: e.To, state: intentPending, n: h.n}
			if e.Checks != nil {
				in.checks.FeynmanPassed = e.Checks.FeynmanPassed
				if len(e.Checks.SensitivityFailures) > 0 {
					in.checks.SensitivityFailures = slices.Clone(e.Checks.SensitivityFailures)
				}
			}
			h.open[e.Intent] = in
			return
		}
		h.started[e.Intent] = &started{at: at, entry: e}
	case ApproveEntry:
		if in := h.open[e.Intent]; in != nil {
			in.approval, in.state = &Approval{By: e.By, Human: e.Human}, intentApproved
		} else if w := h.started[e.Intent]; w != nil {
			w.approved = true
		}
	case RejectEntry:
		delete(h.open, e.Intent)
		delete(h.started, e.Intent)
	case SoftFailEntry:
		delete(h.started, e.Intent)
	case PersistEntry:
		h.persisted(at, e)
	}
}

func (h *history) persisted(at uint64, e PersistEntry) {
	w := h.started[e.Intent]
	switch e.Write {
	case WriteKindEvidence:
		if !h.seen["e"+string(e.Digest[:])] {
			h.seen["e"+string(e.Digest[:])] = true
			h.evidence[e.ClaimID] = append(h.evidence[e.ClaimID], fact{at: at, digest: e.Digest})
		}
	case WriteKindHypothesis:
		hf := hypothesisFact{at: at, id: e.ID, digest: e.Digest}
		if w != nil {
			hf.claimID = w.entry.ClaimID
		}
		h.hypotheses[e.SessionID] = append(h.hypotheses[e.SessionID], hf)
		if w != nil && strings.TrimSpace(hf.claimID) != "" {
			w.linking = true // the link's outcome comes next
			return
		}
	case WriteKindLink:
		if w != nil {
			hs := h.hypotheses[w.entry.SessionID]
			if i := slices.IndexFunc(hs, func(f hypothesisFact) bool { return f.id == e.ID }); i >= 0 {
				hs[i].linked, hs[i].at = true, at
			}
		}
	case WriteKindStatus:
		h.status[e.ClaimID] = statusFact{at: at, status: e.To, evidence: h.evidenceIDs(e.ClaimID)}
		delete(h.open, e.Intent)
	}
	delete(h.started, e.Intent)
}

// evidenceIDs lists the ids of the evidence the log says a claim has.
func (h *history) evidenceIDs(claimID string) []trace.Hash {
	var ids []trace.Hash
	for _, f := range h.evidence[claimID] {
		ids = append(ids, f.digest)
	}
	return ids
}

// Compare checks what backend holds against what the Steward's log says
// was persisted, rebuilding the expected state from the log alone, and
// returns a *MismatchError (ErrMismatch) naming the first disagreement:
// for every claim the log names (in the order it names them), the
// evidence documents (by ID, in order) and the status record; for every
// session, its hypotheses (id, claim, digest of the document, linked). A
// write the log shows as started but not finished is a disagreement too:
// NewSteward finishes it. Propositions are not compared (a Backend has no
// query for them), nor is anything filed under a claim or session the log
// never names.
//
// Run it when no Steward is writing to log or backend.
func Compare(ctx context.Context, log *trace.Log, backend Backend) error {
	if log == nil || backend == nil {
		return fmt.Errorf("%w: Compare needs a log and a backend", ErrMalformed)
	}
	h, err := replay(ctx, log)
	if err != nil {
		return err
	}
	if w := h.firstStarted(); w != nil {
		return &MismatchError{What: fmt.Sprintf("%v write intent %q", w.entry.Write, w.entry.Intent), Entry: w.at,
			Log: "it started and has no outcome", Backend: "what it holds unchecked (NewSteward finishes the write)"}
	}
	for _, c := range h.claims {
		if err := h.compareClaim(ctx, backend, c); err != nil {
			return err
		}
	}
	for _, sid := range h.sessions {
		if err := h.compareSession(ctx, backend, sid); err != nil {
			return err
		}
	}
	return nil
}

// firstStarted returns the earliest unfinished write, or nil.
func (h *history) firstStarted() *started {
	var first *started
	for _, w := range h.started {
		if first == nil || w.at < first.at {
			first = w
		}
	}
	return first
}

func (h *history) compareClaim(ctx context.Context, b Backend, claimID string) error {
	docs, err := b.Evidence(ctx, claimID)
	if err != nil {
		return wrap("reading evidence", err)
	}
	want := h.evidence[claimID]
	for i := range max(len(docs), len(want)) {
		what := fmt.Sprintf("evidence %d of claim %q", i, claimID)
		switch {
		case i >= len(want):
			return &MismatchError{What: what, Entry: h.last, Log: "none", Backend: trace.Hash(sha256.Sum256(docs[i])).String()}
		case i >= len(docs):
			return &MismatchError{What: what, Entry: want[i].at, Log: want[i].digest.String(), Backend: "none"}
		case sha256.Sum256(docs[i]) != want[i].digest:
			return &MismatchError{What: what, Entry: want[i].at, Log: want[i].digest.String(), Backend: trace.Hash(sha256.Sum256(docs[i])).String()}
		}
	}
	got, err := b.Status(ctx, claimID)
	if err != nil {
		return wrap("reading status", err)
	}
	st := h.status[claimID]
	if got.Status != st.status || !slices.Equal(got.Evidence, st.evidence) {
		return &MismatchError{What: fmt.Sprintf("status of claim %q", claimID), Entry: st.at,
			Log: statusText(st.status, st.evidence), Backend: statusText(got.Status, got.Evidence)}
	}
	return nil
}

func (h *history) compareSession(ctx context.Context, b Backend, sessionID string) error {
	got, err := b.Hypotheses(ctx, sessionID)
	if err != nil {
		return wrap("reading hypotheses", err)
	}
	want := h.hypotheses[sessionID]
	for i := range max(len(got), len(want)) {
		what := fmt.Sprintf("hypothesis %d of session %q", i, sessionID)
		var g string
		if i < len(got) {
			r := got[i]
			g = hypothesisText(r.ID, r.ClaimID, sha256.Sum256(r.Document), r.Linked)
			if r.SessionID != sessionID {
				g += fmt.Sprintf(" filed under session %q", r.SessionID)
			}
		}
		switch {
		case i >= len(want):
			return &MismatchError{What: what, Entry: h.last, Log: "none", Backend: g}
		case i >= len(got):
			return &MismatchError{What: what, Entry: want[i].at, Log: want[i].text(), Backend: "none"}
		case g != want[i].text():
			return &MismatchError{What: what, Entry: want[i].at, Log: want[i].text(), Backend: g}
		}
	}
	return nil
}

func (f hypothesisFact) text() string { return hypothesisText(f.id, f.claimID, f.digest, f.linked) }

func hypothesisText(id, claimID string, digest trace.Hash, linked bool) string {
	return fmt.Sprintf("%q (claim %q, digest %s, linked %t)", id, claimID, digest, linked)
}

func statusText(s Status, evidence []trace.Hash) string {
	if s == 0 {
		return "no status"
	}
	return fmt.Sprintf("%v with %d evidence ids %v", s, len(evidence), evidence)
}
