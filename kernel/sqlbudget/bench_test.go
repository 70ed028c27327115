package sqlbudget_test

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestHelperBenchCharger is not a test on its own: BenchmarkCharge starts
// the test binary as long-lived processes that land here. Each reads a
// count n per line on stdin, makes n charges of one unit against the
// shared budget, and answers "done" on stdout, until stdin closes.
func TestHelperBenchCharger(t *testing.T) {
	bud := helperBudget(t, "BenchmarkCharge")
	name, seq := os.Getenv("HELPER_NAME"), 0
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		n, err := strconv.Atoi(in.Text())
		require.NoError(t, err)
		for i := 0; i < n; i++ {
			seq++
			require.NoError(t, bud.Charge(ctx, name+"-"+strconv.Itoa(seq), 1))
		}
		fmt.Fprintln(os.Stdout, "done")
	}
}

// BenchmarkCharge measures shared-budget charges per second (each one a
// committed transaction). "single" is one goroutine; "4processes" is four
// operating-system processes (the test binary, started once before the
// timer) charging one budget at once, each with its own connection pool;
// an op there is 16 charges by each process.
func BenchmarkCharge(b *testing.B) {
	sqltest.ForEach(b, func(b *testing.B, be sqltest.Backend) {
		dsn := be.NewDSN(b)
		_, bs := budgets(b, be, dsn)
		b.Run("single", func(b *testing.B) {
			bud, err := bs.Create(ctx, uuid.NewString(), kernel.Cost(math.MaxInt64/2))
			require.NoError(b, err)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				if err := bud.Charge(ctx, strconv.Itoa(i), 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
		})
		b.Run("4processes", func(b *testing.B) {
			const procs, each = 4, 16
			bud, err := bs.Create(ctx, uuid.NewString(), kernel.Cost(math.MaxInt64/2))
			require.NoError(b, err)
			type child struct {
				cmd *exec.Cmd
				in  io.WriteCloser
				out *bufio.Scanner
			}
			children := make([]child, procs)
			for p := range children {
				cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBenchCharger$", "-test.count=1")
				cmd.Env = append(append(os.Environ(), be.HelperEnv(dsn)...), "HELPER_BUDGET="+bud.ID(), "HELPER_NAME=p"+strconv.Itoa(p))
				cmd.Stderr = os.Stderr
				in, err := cmd.StdinPipe()
				require.NoError(b, err)
				out, err := cmd.StdoutPipe()
				require.NoError(b, err)
				require.NoError(b, cmd.Start())
				children[p] = child{cmd, in, bufio.NewScanner(out)}
			}
			defer func() {
				for _, c := range children {
					_ = c.in.Close()
					_ = c.cmd.Wait()
				}
			}()
			round := func() {
				var wg sync.WaitGroup
				for _, c := range children {
					if _, err := fmt.Fprintln(c.in, each); err != nil {
						b.Fatal(err)
					}
				}
				for _, c := range children {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for c.out.Scan() {
							if strings.TrimSpace(c.out.Text()) == "done" {
								return
							}
						}
						b.Error("helper process ended early")
					}()
				}
				wg.Wait()
			}
			round() // connect and warm up before timing
			b.ReportAllocs()
			for b.Loop() {
				round()
			}
			b.ReportMetric(float64(b.N*procs*each)/b.Elapsed().Seconds(), "charges/s")
			s, err := bud.Snapshot(ctx)
			require.NoError(b, err)
			require.Equal(b, kernel.Cost((b.N+1)*procs*each), s.Gross, "every charge landed exactly once")
		})
	})
}

// BenchmarkAdmit measures rate-window decisions (each a committed
// transaction) on one key whose window holds up to 100 calls, so that a
// decision counts a full window and prunes the call that left it.
func BenchmarkAdmit(b *testing.B) {
	sqltest.ForEach(b, func(b *testing.B, be sqltest.Backend) {
		_, bs := budgets(b, be, be.NewDSN(b))
		at := epoch
		b.ReportAllocs()
		for b.Loop() {
			at = at.Add(time.Millisecond)
			if _, _, err := bs.Admit(ctx, "bench", at, 100*time.Millisecond, 1000); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	})
}
