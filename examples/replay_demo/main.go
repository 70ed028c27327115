// Command replay_demo is the specification's end-to-end script (§7): it
// starts the belief server in-process on a loopback port, creates a
// session, submits two eliminations, fetches the snapshot and the audit
// log over HTTP, replays the log and shows that the replayed survivors
// match the server's. It exits non-zero if anything disagrees.
//
//	go run ./examples/replay_demo                  # the session's log in memory
//	go run ./examples/replay_demo -log belief.trace # the session's log kept in a new file
package main

import (
	"bytes"
	"context"
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
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/belief/server"
	"github.com/verity-go/verity/trace"
)

func main() {
	keep := flag.String("log", "", "keep the session's log in this new `file` (default: in memory)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "replay_demo:", err)
		os.Exit(1)
	}
}

type client struct {
	base string
	http *http.Client
}

// do sends a JSON request and decodes the JSON answer into out; a status
// other than want is an error carrying the error envelope.
func (c *client) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// run is the script. keep, if not empty, is a new file the session's log
// is copied to at the end: the server keeps it in a file storage in a
// temporary directory meanwhile.
func run(ctx context.Context, out io.Writer, keep string) error {
	var storage belief.Storage = belief.NewMemoryStorage()
	var dir string
	if keep != "" {
		if _, err := os.Lstat(keep); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("-log %s: the script writes a new log; give a path where no file is", keep)
		}
		var err error
		if dir, err = os.MkdirTemp("", "verity-replay-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if storage, err = belief.NewFileStorage(dir, trace.FileOptions{}); err != nil {
			return err
		}
	}
	// The real server, in-process, on a loopback port.
	b, err := belief.NewServer(ctx, storage)
	if err != nil {
		return err
	}
	defer b.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: server.New(b), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	c := &client{base: "http://" + ln.Addr().String(), http: &http.Client{Timeout: 10 * time.Second}}
	fmt.Fprintf(out, "belief server listening on %s\n", ln.Addr())

	// 1. Create a session.
	var created server.DeclareResponse
	err = c.do(ctx, "POST", "/v1/sessions", map[string]any{
		"ontology": belief.OntologyBundle{HypothesisSpaceID: "postgres-outage", HypothesisVersion: "v3",
			CausalGraphRef: "graphstore://postgres-repl", CausalGraphVersion: "v17"},
		"hypotheses": []string{"replica-lag", "disk-full", "network-partition", "config-drift", "wal-corruption"},
	}, http.StatusCreated, &created)
	if err != nil {
		return err
	}
	sid := created.SessionID
	fmt.Fprintf(out, "1. declared session with %d hypotheses: %s\n", created.Snapshot.NSurvivors, strings.Join(created.Snapshot.Survivors, ", "))

	// 2. Two eliminations from two sources.
	for i, e := range []map[string]any{
		{"source_id": "adapter://sre", "observation_id": "df-h-001", "eliminated": []string{"disk-full"},
			"justification": map[string]any{"probe": "df -h", "free_pct": 41}},
		{"source_id": "oracle://20q", "observation_id": "q-7", "eliminated": []string{"network-partition", "disk-full", "wal-corruption"},
			"justification": map[string]any{"question": "are replicas reachable?", "answer": "yes"}},
	} {
		var r server.EliminateResponse
		if err := c.do(ctx, "POST", "/v1/sessions/"+sid+"/eliminate", e, http.StatusOK, &r); err != nil {
			return err
		}
		fmt.Fprintf(out, "%d. %s eliminated: applied %v, ignored %v, %d survivors left\n",
			i+2, e["source_id"], r.Applied, r.Ignored, r.Snapshot.NSurvivors)
	}

	// 3. Fetch the snapshot.
	var snap belief.Snapshot
	if err := c.do(ctx, "GET", "/v1/sessions/"+sid, nil, http.StatusOK, &snap); err != nil {
		return err
	}
	fmt.Fprintf(out, "4. snapshot: survivors %v, entropy_proxy %.3f bits\n", snap.Survivors, snap.EntropyProxy)

	// 4. Fetch the audit log. Its events are read with belief.DecodeAuditLog,
	// which checks them strictly; an AuditEntry has no UnmarshalJSON.
	var audit struct {
		Events json.RawMessage `json:"events"`
	}
	if err := c.do(ctx, "GET", "/v1/sessions/"+sid+"/audit", nil, http.StatusOK, &audit); err != nil {
		return err
	}
	events, err := belief.DecodeAuditLog(audit.Events)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "5. audit log: %d events\n", len(events))
	for _, e := range events {
		fmt.Fprintf(out, "   #%d %-15s delta %v survivors_after_hash %s…\n", e.Seq, e.Verb, e.Eliminated, e.SurvivorsAfterHash.String()[:12])
	}

	// 5. Replay it and compare.
	replayed, err := belief.Replay(events)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	got := replayed.Snapshot()
	if !slices.Equal(got.Survivors, snap.Survivors) {
		return fmt.Errorf("replayed survivors %v differ from the server's %v", got.Survivors, snap.Survivors)
	}
	a, _ := json.Marshal(got)
	bs, _ := json.Marshal(snap)
	if !bytes.Equal(a, bs) {
		return fmt.Errorf("replayed snapshot %s differs from the server's %s", a, bs)
	}
	fmt.Fprintf(out, "6. replayed survivors %v match the server's snapshot exactly\n", got.Survivors)

	// A tampered log does not replay: drop the first elimination.
	tampered := append(slices.Clone(events[:1]), events[2:]...)
	_, err = belief.Replay(tampered)
	var re *belief.ReplayError
	if !errors.As(err, &re) {
		return fmt.Errorf("a log with a missing event replayed: %v", err)
	}
	fmt.Fprintf(out, "7. with event #1 removed, replay stops at event %d: %s\n", re.Index, re.Reason)
	if keep == "" {
		return nil
	}
	if err := b.Close(); err != nil {
		return err
	}
	if err := copyNew(filepath.Join(dir, sid+".trace"), keep); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "the session's log is kept in %s\n", keep)
	return err
}

// copyNew copies the file from to to, a file it creates.
func copyNew(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
