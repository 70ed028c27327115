package main

import (
	"errors"

	"github.com/verity-go/verity/internal/osfile"
)

// Bounds of the files read whole.
const (
	maxToolsListSize  = 16 << 20 // a tools/list result
	maxCheckpointSize = 1 << 20  // a signed checkpoint note
)

// readInput reads a file named on the command line (a tools list, a cases
// file, a checkpoint) of at most max bytes (osfile.ReadFile). Anything
// but a regular file — a FIFO, a device, a directory — is an *inputError
// (exit 2, as a usage error), found without waiting on it; a larger file
// is refused rather than cut short.
func readInput(name string, max int64) ([]byte, error) {
	data, err := osfile.ReadFile(name, max)
	if errors.Is(err, osfile.ErrNotRegular) {
		return nil, &inputError{err}
	}
	return data, err
}

// inputError is a file named on a right command line that cannot be used
// (exit 2 as a usage error, without the usage text).
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }
