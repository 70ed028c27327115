//go:build linux

package osfile

import (
	"errors"
	"os"
	"syscall"
)

// NonBlock is the open flag that keeps an open from waiting on a FIFO or
// a device (O_NONBLOCK); it has no effect on a regular file.
const NonBlock = syscall.O_NONBLOCK

// fcntl commands for open file description locks (linux/fcntl.h), which
// the frozen syscall package does not name.
const (
	fOFDGetlk = 36
	fOFDSetlk = 37
)

// The writer's lock covers [0, pidBase); its pid marker is the one byte at
// pidBase+pid, far beyond any file's content.
const pidBase = 1 << 62

// Lock takes the exclusive writer's lock on f, which must be open for
// writing, without waiting. If another open file holds it, Lock returns a
// *HeldError naming the holder's pid.
func Lock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	cerr := rc.Control(func(fd uintptr) {
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: pidBase}
		if lerr = fcntl(fd, fOFDSetlk, &lk); lerr != nil {
			if errors.Is(lerr, syscall.EAGAIN) || errors.Is(lerr, syscall.EACCES) {
				lerr = &HeldError{PID: holder(fd)}
			}
			return
		}
		pid := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: pidBase + int64(os.Getpid()), Len: 1}
		_ = fcntl(fd, fOFDSetlk, &pid) // only names the holder; the lock above is what excludes
	})
	if cerr != nil {
		return cerr
	}
	return lerr
}

// holder reads the pid marker of the writer holding the lock, 0 if none.
func holder(fd uintptr) int {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: pidBase, Len: 0}
	if fcntl(fd, fOFDGetlk, &lk) != nil || lk.Type == syscall.F_UNLCK || lk.Start <= pidBase {
		return 0
	}
	return int(lk.Start - pidBase)
}

// Held reports whether another open file holds the writer's lock on f
// (which may be open read-only); known is false when the system cannot
// tell. It takes no lock.
func Held(f *os.File) (held, known bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, false
	}
	cerr := rc.Control(func(fd uintptr) {
		lk := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: 0, Start: 0, Len: 1}
		if fcntl(fd, fOFDGetlk, &lk) == nil {
			held, known = lk.Type != syscall.F_UNLCK, true
		}
	})
	if cerr != nil {
		return false, false
	}
	return held, known
}

func fcntl(fd uintptr, cmd int, lk *syscall.Flock_t) error {
	for {
		err := syscall.FcntlFlock(fd, cmd, lk)
		if err != syscall.EINTR {
			return err
		}
	}
}
