package trace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The helper process of the one-writer tests: the test binary run again
// with VERITY_TRACE_WRITER=PATH. It opens PATH as a writer (printing the
// error and exiting 3 if it cannot), prints "ready", then appends
// helperEntries entries of about 16 KiB, printing "SEQ HASH" after each
// append has returned (an acknowledgement), then "done", and waits to be
// killed.
func TestLockHelperWriter(t *testing.T) {
	path := os.Getenv("VERITY_TRACE_WRITER")
	if path == "" {
		t.Skip("helper process only")
	}
	f, err := OpenFile(path, FileOptions{Sync: SyncManual})
	if err != nil {
		fmt.Println("refused:", err)
		os.Exit(3)
	}
	l, err := NewLog(f)
	if err != nil {
		fmt.Println("refused:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	// A payload spanning many pages makes a half-written record likely to
	// be seen by a concurrent reader.
	payload := []byte(`{"pad":"` + strings.Repeat("x", 16<<10) + `"}`)
	for range helperEntries {
		e, err := l.Append(context.Background(), "test.writer", payload)
		if err != nil {
			fmt.Println("append:", err)
			os.Exit(4)
		}
		fmt.Println(e.Seq, e.Hash)
		time.Sleep(200 * time.Microsecond)
	}
	fmt.Println("done")
	select {}
}

// helperEntries is how many entries the helper writer appends (about
// 24 MiB).
const helperEntries = 1500

// writerProcess is a helper writer running over path.
type writerProcess struct {
	cmd  *exec.Cmd
	out  *bufio.Reader
	acks chan string
}

// startWriter starts a helper writer over path and returns once it has
// either opened the log ("ready") or exited.
func startWriter(t *testing.T, path string) (*writerProcess, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VERITY_TRACE_WRITER="+path)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	w := &writerProcess{cmd: cmd, out: bufio.NewReader(stdout), acks: make(chan string, 1<<16)}
	first, err := w.out.ReadString('\n')
	if err != nil || first != "ready\n" {
		_ = cmd.Wait()
		return nil, first
	}
	go func() {
		defer close(w.acks)
		for {
			line, err := w.out.ReadString('\n')
			if err != nil {
				return // the kill cut it short: not an acknowledgement
			}
			w.acks <- strings.TrimSuffix(line, "\n")
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return w, ""
}

// kill ends the writer with SIGKILL and returns every acknowledgement it
// printed.
func (w *writerProcess) kill(t *testing.T) []string {
	require.NoError(t, w.cmd.Process.Kill())
	_ = w.cmd.Wait()
	var acks []string
	for a := range w.acks {
		if a == "done" {
			continue
		}
		acks = append(acks, a)
	}
	return acks
}

// TestOneWriterPerFile: while one process appends to a log file, a second
// writer (another process, or this one) is refused at once with a
// *LockedError naming the file and the holder; readers open the log
// while it grows and always see a verified prefix; after the writer is
// killed the lock is gone, the log verifies (after cutting the torn
// record the kill may leave) and holds every acknowledged entry.
func TestOneWriterPerFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.trace")
	w, refused := startWriter(t, path)
	require.NotNil(t, w, "the first writer opens the log: %s", refused)

	// A second writer process is refused and exits.
	start := time.Now()
	w2, refused := startWriter(t, path)
	require.Nil(t, w2, "a second writer process must be refused")
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Contains(t, refused, "refused: trace: "+path+" is open for writing by")
	if runtime.GOOS == "linux" {
		assert.Contains(t, refused, "process "+strconv.Itoa(w.cmd.Process.Pid))
	}

	// So is a writer in this process, at once.
	_, err := OpenFile(path, FileOptions{})
	require.ErrorIs(t, err, ErrLocked)
	var le *LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, path, le.Path)
	if runtime.GOOS == "linux" {
		assert.Equal(t, w.cmd.Process.Pid, le.PID, "the holder is named")
	}
	// And so is a repair, which could cut a record being written.
	_, err = RepairFile(path)
	require.ErrorIs(t, err, ErrLocked)

	// Readers take no lock and read up to the last complete record while
	// the writer appends.
	var last uint64
	for i := 0; i < 400 && last < helperEntries; i++ {
		ro, err := OpenFileReadOnly(path)
		require.NoError(t, err, "read %d while the writer appends", i)
		h, err := VerifyStore(ctx, ro)
		require.NoError(t, err)
		require.NoError(t, ro.Close())
		require.GreaterOrEqual(t, h.Size, last, "a reader never sees the log shrink")
		last = h.Size
	}
	require.Positive(t, last, "the writer appended while the readers read")

	acks := w.kill(t)
	require.NotEmpty(t, acks)
	if _, err := RepairFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, FileOptions{}) // the lock died with its holder
	require.NoError(t, err)
	defer f.Close()
	h, err := VerifyStore(ctx, f)
	require.NoError(t, err)
	hashes := map[uint64]Hash{}
	for e, err := range f.Entries(ctx, 0) {
		require.NoError(t, err)
		hashes[e.Seq] = e.Hash
	}
	for _, a := range acks {
		seqText, hashText, ok := strings.Cut(a, " ")
		require.True(t, ok, "ack %q", a)
		seq, err := strconv.ParseUint(seqText, 10, 64)
		require.NoError(t, err)
		require.Less(t, seq, h.Size, "acknowledged entry %d lost", seq)
		assert.Equal(t, hashText, hashes[seq].String(), "acknowledged entry %d changed", seq)
	}
}

// TestReaderReadsUpToTheRecordBeingWritten: a log whose final record is
// incomplete reads, while a writer holds it, as the entries before that
// record (an append in progress); once no writer holds it, the same bytes
// are a torn tail (a crash).
func TestReaderReadsUpToTheRecordBeingWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux lets a reader ask whether a writer holds the log")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.trace")
	f, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	l, err := NewLog(f)
	require.NoError(t, err)
	for range 3 {
		_, err := l.AppendValue(ctx, "test.append", map[string]int{"i": 1})
		require.NoError(t, err)
	}
	want := l.Head()
	// Half of a fourth record, as a reader may see it mid-write.
	e, _, err := Next(want, "test.append", []byte(`{"i":4}`), time.Now())
	require.NoError(t, err)
	frame := appendFrame(nil, e)
	raw, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = raw.Write(frame[:len(frame)/2])
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	ro, err := OpenFileReadOnly(path)
	require.NoError(t, err, "an append in progress is not a torn tail")
	h, err := VerifyStore(ctx, ro)
	require.NoError(t, err)
	assert.Equal(t, want, h)
	require.NoError(t, ro.Close())

	require.NoError(t, l.Close())
	_, err = OpenFileReadOnly(path)
	require.ErrorIs(t, err, ErrTornTail, "with no writer, the same bytes are a crash's torn tail")
}

// TestSecondWriterInProcessRefused: the lock belongs to the open file, so
// a second OpenFile in the same process is refused too (until the first
// is closed), and closing some other descriptor of the file (a reader's)
// does not drop it.
func TestSecondWriterInProcessRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.trace")
	f, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	ro, err := OpenFileReadOnly(path)
	require.NoError(t, err)
	require.NoError(t, ro.Close())
	_, err = OpenFile(path, FileOptions{})
	var le *LockedError
	require.ErrorAs(t, err, &le)
	assert.True(t, errors.Is(err, ErrLocked))
	if runtime.GOOS == "linux" {
		assert.Equal(t, os.Getpid(), le.PID)
		assert.Contains(t, err.Error(), "already open for writing in this process")
	}
	require.NoError(t, f.Close())
	f, err = OpenFile(path, FileOptions{})
	require.NoError(t, err, "closing the writer releases the lock")
	require.NoError(t, f.Close())
}
