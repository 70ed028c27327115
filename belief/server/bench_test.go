package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/verity-go/verity/belief"
)

// benchServer starts the handler on a real loopback listener over a
// memory storage with one session of 100 hypotheses.
func benchServer(b *testing.B) (*httptest.Server, string, *http.Client) {
	bs, err := belief.NewServer(context.Background(), belief.NewMemoryStorage())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bs.Close() })
	ts := httptest.NewServer(New(bs))
	b.Cleanup(ts.Close)
	hyps := make([]string, 100)
	for i := range hyps {
		hyps[i] = `"h` + strconv.Itoa(i) + `"`
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	resp, err := client.Post(ts.URL+"/v1/sessions", "application/json",
		strings.NewReader(`{`+ontoJSON+`,"hypotheses":[`+strings.Join(hyps, ",")+`]}`))
	if err != nil || resp.StatusCode != 201 {
		b.Fatalf("declare: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var out DeclareResponse
	if err := decodeJSON(resp.Body, &out); err != nil {
		b.Fatal(err)
	}
	return ts, out.SessionID, client
}

func decodeJSON(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// BenchmarkHTTPSnapshot is GET /v1/sessions/{id} over loopback with
// keep-alive connections and parallel clients; req/s is the figure.
func BenchmarkHTTPSnapshot(b *testing.B) {
	ts, sid, client := benchServer(b)
	url := ts.URL + "/v1/sessions/" + sid
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkHTTPEliminate is POST /v1/sessions/{id}/eliminate over loopback
// with parallel clients: each request is a new observation (so a new
// audit event recorded in the session's trace log) eliminating one of the
// 100 hypotheses (applied the first time, ignored afterwards).
func BenchmarkHTTPEliminate(b *testing.B) {
	ts, sid, client := benchServer(b)
	url := ts.URL + "/v1/sessions/" + sid + "/eliminate"
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			body := `{"source_id":"bench","observation_id":"` + strconv.FormatInt(i, 10) + `","eliminated":["h` + strconv.FormatInt(i%99, 10) + `"]}`
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
