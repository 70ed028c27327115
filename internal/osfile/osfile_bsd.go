//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package osfile

import (
	"errors"
	"os"
	"syscall"
)

// NonBlock is the open flag that keeps an open from waiting on a FIFO or
// a device (O_NONBLOCK); it has no effect on a regular file.
const NonBlock = syscall.O_NONBLOCK

// Lock takes the exclusive writer's lock on f without waiting: flock(2),
// held by the open file. If another open file holds it, Lock returns a
// *HeldError (the holder is not named).
func Lock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if lerr != syscall.EINTR {
				break
			}
		}
		if errors.Is(lerr, syscall.EWOULDBLOCK) {
			lerr = &HeldError{}
		}
	})
	if cerr != nil {
		return cerr
	}
	return lerr
}

// Held cannot ask flock(2) without taking the lock: it never knows.
func Held(f *os.File) (held, known bool) { return false, false }
