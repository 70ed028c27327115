package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"

	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// Pinned tool definitions (-pins): every tool the upstream lists is
// pinned to the hash of its definition (kernel/toolgate/pin), and a tool
// whose listed definition is not its pinned one is hidden from
// tools/list and its calls are refused until a person re-pins it at the
// approval inbox.
//
//	-pins first-use   (the default) the first complete listing of the
//	                  upstream is trusted, recorded on the log as its pin
//	-pins FILE        the lock file's pins (`verity pin` writes one);
//	                  a malformed or tampered file exits 2 with one line
//	-pins off         no pinning (calls record no definition)
//
// -pins-server NAME names the upstream among the pins: the lock file's
// key (by default its only server) and Server of the log's pin entries
// (by default, without a lock file, the upstream command's base name).

// pinsFirstUse and pinsOff are the two -pins values that are not files
// (a lock file of either name is given as ./first-use or ./off).
const (
	pinsFirstUse = "first-use"
	pinsOff      = "off"
)

// pinsConfig is -pins and -pins-server.
type pinsConfig struct {
	file   string
	server string
	lock   *pin.Lock // loaded by load, for a lock file
	// shared, with -db, is the store the replicas share first-use pins
	// and re-pins through (db.go).
	shared gatemcp.SharedPins
}

func addPinsFlags(fs *flag.FlagSet, c *pinsConfig) {
	fs.StringVar(&c.file, "pins", pinsFirstUse, "pin the upstream's tool definitions: first-use (trust the first listing, recorded on the log), a lock file (pins.json from `verity pin`), or off")
	fs.StringVar(&c.server, "pins-server", "", "the upstream's name among the pins: the lock file's key (default: its only server) and the log's pin entries' (default: the upstream command's base name)")
}

func (c *pinsConfig) enabled() bool { return c.file != pinsOff }

// check runs after parsing.
func (c *pinsConfig) check() error {
	switch {
	case c.file == "":
		return errors.New("-pins may not be empty: give first-use, off or a lock file")
	case c.file == pinsOff && c.server != "":
		return errors.New("-pins-server needs pinning (-pins is off)")
	}
	return nil
}

// load reads the lock file: a regular file of at most pin.MaxLock
// bytes, read strictly (pin.ParseLock: an unknown member, a bad hash, a
// tool named twice, a definition that does not hash to its pin); and
// settles the server's name.
func (c *pinsConfig) load(upstream []string) error {
	if c.file == pinsOff {
		return nil
	}
	if c.file == pinsFirstUse {
		if c.server == "" && len(upstream) > 0 {
			c.server = filepath.Base(upstream[0])
		}
		return nil
	}
	f, err := os.Open(c.file)
	if err != nil {
		return fmt.Errorf("-pins: %w", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("-pins: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("-pins %s: not a regular file", c.file)
	}
	data, err := io.ReadAll(io.LimitReader(f, pin.MaxLock+1))
	if err != nil {
		return fmt.Errorf("-pins: %w", err)
	}
	l, err := pin.ParseLock(data)
	if err != nil {
		return fmt.Errorf("-pins %s: %w", c.file, err)
	}
	names := slices.Sorted(maps.Keys(l.Servers))
	switch {
	case c.server == "" && len(names) == 1:
		c.server = names[0]
	case c.server == "":
		return fmt.Errorf("-pins %s names %d servers (%v): say which is the upstream with -pins-server", c.file, len(names), names)
	case l.Servers[c.server].Tools == nil:
		return fmt.Errorf("-pins %s has no server %q (it has %v)", c.file, c.server, names)
	}
	c.lock = &l
	return nil
}

// open returns the Pins over log, or nil with -pins off.
func (c *pinsConfig) open(ctx context.Context, log *trace.Log, logger *slog.Logger) (*gatemcp.Pins, error) {
	if !c.enabled() {
		return nil, nil
	}
	ps, err := gatemcp.NewPins(ctx, log, gatemcp.PinOptions{Server: c.server, Lock: c.lock, Logger: logger, Shared: c.shared})
	if err != nil {
		return nil, err
	}
	source := "first_use"
	if c.lock != nil {
		source = "lock " + c.file
	}
	logger.Info("pins", "server", c.server, "source", source)
	return ps, nil
}
