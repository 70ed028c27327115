package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/verity-go/verity/internal/osfile"
)

// Bounds of the files read whole.
const (
	maxToolsListSize  = 16 << 20 // a tools/list result
	maxCheckpointSize = 1 << 20  // a signed checkpoint note
)

// readInput reads a file named on the command line (a tools list, a cases
// file, a checkpoint) of at most max bytes. Anything but a regular file —
// a FIFO, a device, a directory — is a usage error, found without waiting
// on it; a larger file is refused rather than cut short.
func readInput(name string, max int64) ([]byte, error) {
	f, err := osfile.OpenRegular(name, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, osfile.ErrNotRegular) {
			return nil, usagef("%v", err)
		}
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	return data, nil
}
