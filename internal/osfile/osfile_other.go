//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package osfile

import "os"

// NonBlock is 0 where no open flag is needed (or known) to keep an open
// from waiting on a special file.
const NonBlock = 0

// Lock takes no lock on this system and returns nil.
func Lock(f *os.File) error { return nil }

// Held does not know on this system.
func Held(f *os.File) (held, known bool) { return false, false }
