package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkProxyVsPassThrough is the scripted comparison of verity-mcp's
// own cost: in one run, over the same upstream (internal/testserver's
// echo, a process over stdio), one client each
//
//	direct   client → upstream
//	pass     client → internal/passthrough (a minimal proxy on the same
//	         SDK: no gate, no log) → upstream
//	tmpfs    client → verity-mcp, its log on /dev/shm (SyncGroup as
//	         always; an fsync on tmpfs writes nothing to a disk) → upstream
//	durable  client → verity-mcp, its log in the test's temporary
//	         directory (the default durable log on the disk) → upstream
//
// and fsync, one 256-byte append and its fsync in the durable log's
// directory (the bare fsync the added latency is counted in).
//
// inflight=1: each iteration is one round, one call through each client
// and one bare fsync, in an order that rotates from round to round, so
// that the load of a shared machine falls on all of them alike. It
// reports each one's p50 latency (direct-p50-ns, pass-p50-ns,
// tmpfs-p50-ns, durable-p50-ns, fsync-p50-ns) and the figures the
// targets are set in:
//
//	tmpfs-x-pass          tmpfs p50 / pass p50               (target ≤ 1.5)
//	durable-x-pass        durable p50 / pass p50
//	durable-added-fsyncs  (durable p50 − direct p50) / fsync p50
//	durable-margin-ns     2 × fsync p50 + 0.15 ms − (durable p50 − direct
//	                      p50): the target is met when it is ≥ 0
//	durable-pass-margin-ns       the same over the pass-through instead
//	                      of a direct call (the second stdio hop, which
//	                      any proxy adds, left out)
//	durable-pass-margin-mean-ns  the same in mean bare fsyncs
//	                      (fsync-mean-ns): a call's two fsyncs are two
//	                      draws of a skewed distribution, and the median
//	                      of their sum is nearer twice the mean than twice
//	                      the median
//
// inflight=8: each iteration runs a block of 64 calls, 8 at a time on
// one client, through pass, tmpfs and durable in turn (rotating); it
// reports each one's calls/s and tmpfs-x-pass-calls, durable-x-pass-calls,
// their fraction of the pass-through's (target ≥ 0.5 durable).
//
// fsyncs: verity-mcp durable with -metrics, sequential calls, each
// followed by a bare fsync: the log's fsyncs per call
// (verity_trace_sync_duration_seconds_count), their mean duration
// (log-ns/fsync, from the histogram's sum) and the bare fsync's mean
// (bare-ns/fsync) in the same run.
//
//	go test -run '^$' -bench ProxyVsPassThrough -benchtime 400x ./cmd/verity-mcp
func BenchmarkProxyVsPassThrough(b *testing.B) {
	shm := shmDir(b)
	if shm == "" {
		b.Skip("no /dev/shm: the tmpfs log needs it")
	}
	disk := b.TempDir()
	clients := []struct {
		name string
		cs   *sdk.ClientSession
	}{
		{"direct", commandClient(b, newUpstream(b).argv())},
		{"pass", commandClient(b, append([]string{passThroughBinary(b), "--"}, newUpstream(b).argv()...))},
		{"tmpfs", commandClient(b, verityArgv(b, filepath.Join(shm, "trace.log")))},
		{"durable", commandClient(b, verityArgv(b, filepath.Join(disk, "trace.log")))},
	}
	for _, c := range clients {
		echo(b, c.cs) // the first decision starts the caller's kernel session
	}
	f, err := os.Create(filepath.Join(disk, "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	buf := make([]byte, 256)
	fsync := func() {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("inflight=1", func(b *testing.B) {
		ops := make([]func(), 0, len(clients)+1)
		for _, c := range clients {
			ops = append(ops, func() { echo(b, c.cs) })
		}
		ops = append(ops, fsync)
		lat := make([][]time.Duration, len(ops))
		round := 0
		for b.Loop() {
			for k := range ops {
				i := (round + k) % len(ops)
				start := time.Now()
				ops[i]()
				lat[i] = append(lat[i], time.Since(start))
			}
			round++
		}
		p50 := make([]float64, len(ops))
		for i := range ops {
			p50[i] = float64(median(lat[i]).Nanoseconds())
		}
		direct, pass, tmpfs, durable, bare := p50[0], p50[1], p50[2], p50[3], p50[4]
		var sum time.Duration
		for _, d := range lat[4] {
			sum += d
		}
		bareMean := float64(sum.Nanoseconds()) / float64(len(lat[4]))
		b.ReportMetric(direct, "direct-p50-ns")
		b.ReportMetric(pass, "pass-p50-ns")
		b.ReportMetric(tmpfs, "tmpfs-p50-ns")
		b.ReportMetric(durable, "durable-p50-ns")
		b.ReportMetric(bare, "fsync-p50-ns")
		b.ReportMetric(bareMean, "fsync-mean-ns")
		b.ReportMetric(tmpfs/pass, "tmpfs-x-pass")
		b.ReportMetric(durable/pass, "durable-x-pass")
		b.ReportMetric((durable-direct)/bare, "durable-added-fsyncs")
		b.ReportMetric(2*bare+150e3-(durable-direct), "durable-margin-ns")
		b.ReportMetric(2*bare+150e3-(durable-pass), "durable-pass-margin-ns")
		b.ReportMetric(2*bareMean+150e3-(durable-pass), "durable-pass-margin-mean-ns")
		b.ReportMetric(0, "ns/op")
	})

	b.Run("inflight=8", func(b *testing.B) {
		const block, inflight = 64, 8
		some := clients[1:] // pass, tmpfs, durable
		spent := make([]time.Duration, len(some))
		round := 0
		for b.Loop() {
			for k := range some {
				i := (round + k) % len(some)
				start := time.Now()
				var next atomic.Int64
				var wg sync.WaitGroup
				for range inflight {
					wg.Go(func() {
						for next.Add(1) <= block {
							echo(b, some[i].cs)
						}
					})
				}
				wg.Wait()
				spent[i] += time.Since(start)
			}
			round++
		}
		rate := make([]float64, len(some))
		for i, c := range some {
			rate[i] = float64(block*b.N) / spent[i].Seconds()
			b.ReportMetric(rate[i], c.name+"-calls/s")
		}
		b.ReportMetric(rate[1]/rate[0], "tmpfs-x-pass-calls")
		b.ReportMetric(rate[2]/rate[0], "durable-x-pass-calls")
		b.ReportMetric(0, "ns/op")
	})

	b.Run("fsyncs", func(b *testing.B) {
		stderr := &syncBuffer{}
		cmd := exec.Command(proxyBinary(b), append([]string{"-policy", benchPolicyFile(b), "-log", filepath.Join(b.TempDir(), "trace.log"),
			"-metrics", "127.0.0.1:0", "--"}, newUpstream(b).argv()...)...)
		cmd.Stderr = stderr
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "v1"}, nil).
			Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cs.Close() })
		echo(b, cs)
		m := regexp.MustCompile(`msg=metrics http=(\S+)`).FindStringSubmatch(stderr.String())
		if m == nil {
			b.Fatalf("no metrics address:\n%s", stderr.String())
		}
		const count, sum = "verity_trace_sync_duration_seconds_count", "verity_trace_sync_duration_seconds_sum"
		before := scrape(b, m[1])
		var bare []time.Duration
		for b.Loop() {
			echo(b, cs)
			start := time.Now()
			fsync()
			bare = append(bare, time.Since(start))
		}
		after := scrape(b, m[1])
		n := after[count] - before[count]
		b.ReportMetric(n/float64(b.N), "fsyncs/call")
		if n > 0 {
			b.ReportMetric((after[sum]-before[sum])/n*1e9, "log-ns/fsync")
		}
		var total time.Duration
		for _, d := range bare {
			total += d
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(len(bare)), "bare-ns/fsync")
		b.ReportMetric(0, "ns/op")
	})
}

// verityArgv is verity-mcp's command line over a new upstream, its log
// at logPath.
func verityArgv(b *testing.B, logPath string) []string {
	return append([]string{proxyBinary(b), "-policy", benchPolicyFile(b), "-log", logPath, "--"}, newUpstream(b).argv()...)
}

func benchPolicyFile(b *testing.B) string {
	pol := filepath.Join(b.TempDir(), "policy.json")
	if err := os.WriteFile(pol, []byte(benchPolicy), 0o600); err != nil {
		b.Fatal(err)
	}
	return pol
}

// shmDir returns a new directory on /dev/shm (tmpfs), removed when b
// ends, or "" when there is none.
func shmDir(b *testing.B) string {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return ""
	}
	dir, err := os.MkdirTemp("/dev/shm", "verity-mcp-bench")
	if err != nil {
		return ""
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// echo makes one call of the upstream's echo tool through cs (from any
// goroutine: a failure is reported with Errorf).
func echo(b *testing.B, cs *sdk.ClientSession) {
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}})
	switch {
	case err != nil:
		b.Errorf("call: %v", err)
	case res.IsError:
		b.Errorf("call refused: %v", res.Content)
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

var passThrough struct {
	once sync.Once
	bin  string
	err  error
}

// passThroughBinary builds internal/passthrough, the minimal proxy
// verity-mcp is compared with.
func passThroughBinary(tb testing.TB) string {
	passThrough.once.Do(func() {
		passThrough.bin = filepath.Join(bins.dir, "passthrough")
		passThrough.err = goBuild(passThrough.bin, "../../internal/passthrough")
	})
	if passThrough.err != nil {
		tb.Fatal(passThrough.err)
	}
	return passThrough.bin
}
