package surface

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that keeps what Check reports instead of
// failing the test that runs it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatal(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }

// TestCheckCatchesGrowth: a package whose exported names differ from
// its golden list, or outnumber the cap, fails the surface test; one
// that matches both passes. Fields and unexported names are not counted;
// methods of exported types are.
func TestCheckCatchesGrowth(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(`package p

type T struct{ Field int }

func (T) Method()  {}
func (T) private() {}
func New() T       { return T{} }

const c, C = 1, 2

var V = 3
`), 0o600))
	golden := filepath.Join(dir, "exported.txt")
	require.NoError(t, os.WriteFile(golden, []byte("C\nNew\nT\nT.Method\nV\n"), 0o600))

	r := &recorder{TB: t}
	Check(r, dir, golden, 5)
	assert.Empty(t, r.errors)

	r = &recorder{TB: t}
	Check(r, dir, golden, 4)
	assert.Equal(t, []string{"5 exported identifiers, at most 4"}, r.errors)

	require.NoError(t, os.WriteFile(golden, []byte("C\nNew\nT\nV\n"), 0o600))
	r = &recorder{TB: t}
	Check(r, dir, golden, 5)
	require.Len(t, r.errors, 2)
	assert.Contains(t, r.errors[0], "exported but not in")
	assert.Contains(t, r.errors[0], "T.Method")
}
