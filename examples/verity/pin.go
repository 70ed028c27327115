package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

const pinUsage = `usage: verity pin [-o pins.json] [-server NAME] [-timeout 30s] -- UPSTREAM COMMAND...
       verity pin check -pins pins.json [-server NAME] [-timeout 30s] -- UPSTREAM COMMAND...
       verity pin approve -pins pins.json -tool NAME [-server NAME] [-timeout 30s] -- UPSTREAM COMMAND...
       verity pin diff OLD NEW

pin     starts the MCP server UPSTREAM COMMAND (stdio), lists its tools (every page
        of tools/list) and writes the lock file -o (default pins.json; - for standard
        output): each tool's definition hash — the SHA-256 of the RFC 8785 form of the
        whole definition as listed — the hash of the server's instructions, and the
        definitions themselves, under the server's name (-server, default the name
        it gives in initialize). Review it, commit it, and run verity-mcp -pins with
        it. Definitions with invisible, bidirectional or look-alike characters, very
        long descriptions or phrases that instruct the model are listed as warnings.
check   lists the server's tools and compares them with the lock file: every tool
        changed, new, or pinned and no longer listed, and changed instructions, with
        the diff of the definitions when the lock file holds the old one.
approve re-pins one tool in the lock file to the definition the server lists now (or
        removes it, when the server no longer lists it), after showing the diff; the
        rest of the file is left as it is. Commit the change for review.
diff    shows what changed between two lock files (or two tools/list results), tool by
        tool, invisible and look-alike characters written as visible escapes.

exit: 0 written (pin, approve), no drift (check), no difference (diff);
      1 drift (check) or a difference (diff);
      2 could not run: a usage error, a lock file that is missing or invalid, a server
        that does not list its tools, definitions that cannot be hashed
`

// errPinDrift is returned when check or diff found differences: they are
// on stdout already (exit 1).
var errPinDrift = errors.New("the tools differ from their pins (listed above)")

// maxLockSize bounds a lock file read.
const maxLockSize = pin.MaxLock

// cmdPin is "verity pin", "verity pin check" and "verity pin diff", with
// verity policy's exit codes: 1 only for drift, 2 for anything that kept
// the command from running.
func cmdPin(ctx context.Context, e *env, args []string) error {
	var err error
	switch {
	case len(args) > 0 && args[0] == "check":
		err = pinCheck(ctx, e, args[1:])
	case len(args) > 0 && args[0] == "approve":
		err = pinApprove(ctx, e, args[1:])
	case len(args) > 0 && args[0] == "diff":
		err = pinDiff(e, args[1:])
	case len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help"):
		fmt.Fprint(e.stdout, pinUsage)
		return nil
	default:
		err = pinWrite(ctx, e, args)
	}
	var ue *usageError
	if err == nil || errors.Is(err, errPinDrift) || errors.As(err, &ue) {
		return err
	}
	return &inputError{err}
}

// upstreamArgs splits args at "--".
func upstreamArgs(cmd string, args []string) ([]string, []string, error) {
	i := slices.Index(args, "--")
	if i < 0 || i == len(args)-1 {
		return nil, nil, usagef("%s: give the upstream server's command after --\n\n%s", cmd, pinUsage)
	}
	return args[:i], args[i+1:], nil
}

// listPinned lists the upstream's tools as a pin.Listing named server
// (its own name when ""), with their warnings.
func listPinned(ctx context.Context, e *env, argv []string, server string, timeout time.Duration) (pin.Listing, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := listUpstream(ctx, argv, e.stderr)
	if err != nil {
		return pin.Listing{}, fmt.Errorf("upstream %s: %w", argv[0], err)
	}
	l := pin.Listing{Server: server, Instructions: pin.HashInstructions(u.instructions, u.hasInstr)}
	if l.Server == "" {
		l.Server = u.server
	}
	if l.Server == "" {
		return pin.Listing{}, fmt.Errorf("upstream %s: the server gives no name in initialize; name it with -server", argv[0])
	}
	seen := map[string]bool{}
	for i, page := range u.pages {
		tools, err := pin.ParseTools(page)
		if err != nil {
			return pin.Listing{}, fmt.Errorf("upstream %s: tools/list page %d: %w", argv[0], i+1, err)
		}
		for _, t := range tools {
			if seen[t.Name] {
				return pin.Listing{}, fmt.Errorf("upstream %s: tools/list: two tools named %q", argv[0], t.Name)
			}
			seen[t.Name] = true
			l.Tools = append(l.Tools, t)
		}
	}
	return l, nil
}

func pinWrite(ctx context.Context, e *env, args []string) error {
	args, upstream, err := upstreamArgs("pin", args)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "pins.json", "the lock file to write (- for standard output)")
	server := fs.String("server", "", "the server's name in the lock file (default: its own)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the upstream server may take to list its tools")
	if _, err := parseInterspersed(fs, args, 0); err != nil {
		return err
	}
	if *timeout <= 0 {
		return usagef("pin: -timeout must be positive")
	}
	l, err := listPinned(ctx, e, upstream, *server, *timeout)
	if err != nil {
		return err
	}
	lock := pin.LockOf(l)
	text := lock.Encode()
	if _, err := pin.ParseLock(text); err != nil { // what is written reads back
		return fmt.Errorf("the lock file of %q would not read back: %w", l.Server, err)
	}
	ws := pin.Warnings(l.Tools)
	report := e.stdout
	if *out == "-" {
		if _, err := e.stdout.Write(text); err != nil {
			return err
		}
		report = e.stderr
	} else if err := trace.WriteFileAtomic(*out, text, 0o644); err != nil {
		return err
	}
	where := *out
	if where == "-" {
		where = "standard output"
	}
	fmt.Fprintf(report, "pinned %d tools of server %s to %s\n", len(l.Tools), pin.Visible(l.Server), where)
	for _, w := range ws {
		fmt.Fprintf(report, "  warning: %s\n", w)
	}
	return nil
}

func pinCheck(ctx context.Context, e *env, args []string) error {
	args, upstream, err := upstreamArgs("pin check", args)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("pin check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pinsFile := fs.String("pins", "", "the lock file")
	server := fs.String("server", "", "the server's name in the lock file")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the upstream server may take to list its tools")
	if _, err := parseInterspersed(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *pinsFile == "":
		return usagef("pin check: give the lock file with -pins")
	case *timeout <= 0:
		return usagef("pin check: -timeout must be positive")
	}
	lock, l, sl, err := lockAndListing(ctx, e, upstream, *pinsFile, *server, *timeout)
	if err != nil {
		return err
	}
	state, _ := pin.State{}.LockLoaded(lock)
	_, outcome := state.Listed(l)
	fmt.Fprintf(e.stdout, "%s: server %s, %d tools pinned, %d listed\n", *pinsFile, pin.Visible(l.Server), len(sl.Tools), len(l.Tools))
	if len(outcome.Drift) == 0 {
		fmt.Fprintln(e.stdout, "  ok: every tool is at its pin")
		return nil
	}
	listed := map[string]pin.Tool{}
	var names []string
	for _, t := range l.Tools {
		listed[t.Name] = t
		names = append(names, t.Name)
	}
	for _, d := range outcome.Drift {
		fmt.Fprintf(e.stdout, "  %s\n", describeDrift(d))
		if d.Tool == "" {
			continue
		}
		var old, new []byte
		if def, ok := sl.Definitions[d.Tool]; ok {
			old = def
		}
		if t, ok := listed[d.Tool]; ok {
			new = t.Definition
		}
		if old == nil && new == nil {
			continue
		}
		r, err := pin.Compare(old, new, names)
		if err != nil {
			return err
		}
		fmt.Fprint(e.stdout, indent(r.Text(), "    "))
	}
	return errPinDrift
}

// lockAndListing reads the lock file pinsFile, lists the upstream's
// tools, and finds the lock's server for them (lockServer).
func lockAndListing(ctx context.Context, e *env, upstream []string, pinsFile, server string, timeout time.Duration) (pin.Lock, pin.Listing, pin.ServerLock, error) {
	lock, err := readLock(pinsFile)
	if err != nil {
		return pin.Lock{}, pin.Listing{}, pin.ServerLock{}, err
	}
	l, err := listPinned(ctx, e, upstream, server, timeout)
	if err != nil {
		return pin.Lock{}, pin.Listing{}, pin.ServerLock{}, err
	}
	sl, err := lockServer(lock, pinsFile, &l, server != "")
	if err != nil {
		return pin.Lock{}, pin.Listing{}, pin.ServerLock{}, err
	}
	return lock, l, sl, nil
}

// lockServer finds the lock's server for a listing: -server, else the
// server's own name, else the lock's only server.
func lockServer(lock pin.Lock, pinsFile string, l *pin.Listing, named bool) (pin.ServerLock, error) {
	if !named {
		if _, ok := lock.Servers[l.Server]; !ok && len(lock.Servers) == 1 {
			l.Server = slices.Collect(maps.Keys(lock.Servers))[0]
		}
	}
	sl, ok := lock.Servers[l.Server]
	if !ok {
		return pin.ServerLock{}, fmt.Errorf("%s pins no server %q (it pins %s); name it with -server", pinsFile, l.Server,
			strings.Join(slices.Sorted(maps.Keys(lock.Servers)), ", "))
	}
	return sl, nil
}

func pinApprove(ctx context.Context, e *env, args []string) error {
	args, upstream, err := upstreamArgs("pin approve", args)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("pin approve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pinsFile := fs.String("pins", "", "the lock file")
	tool := fs.String("tool", "", "the tool to re-pin")
	server := fs.String("server", "", "the server's name in the lock file")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the upstream server may take to list its tools")
	if _, err := parseInterspersed(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *pinsFile == "" || *tool == "":
		return usagef("pin approve: give the lock file with -pins and the tool with -tool")
	case *timeout <= 0:
		return usagef("pin approve: -timeout must be positive")
	}
	lock, l, sl, err := lockAndListing(ctx, e, upstream, *pinsFile, *server, *timeout)
	if err != nil {
		return err
	}
	var listed *pin.Tool
	var names []string
	for i, t := range l.Tools {
		names = append(names, t.Name)
		if t.Name == *tool {
			listed = &l.Tools[i]
		}
	}
	_, pinned := sl.Tools[*tool]
	switch {
	case listed == nil && !pinned:
		return fmt.Errorf("server %s neither lists nor pins a tool %q", pin.Visible(l.Server), pin.Visible(*tool))
	case listed != nil && pinned && sl.Tools[*tool] == listed.Hash:
		fmt.Fprintf(e.stdout, "tool %s of server %s is at its pin %s: nothing to approve\n", pin.Visible(*tool), pin.Visible(l.Server), listed.Hash)
		return nil
	}
	var old, new []byte
	if def, ok := sl.Definitions[*tool]; ok {
		old = def
	}
	if listed != nil {
		new = listed.Definition
	}
	if old != nil || new != nil {
		r, err := pin.Compare(old, new, names)
		if err != nil {
			return err
		}
		fmt.Fprint(e.stdout, r.Text())
	}
	tools, defs := maps.Clone(sl.Tools), maps.Clone(sl.Definitions)
	if defs == nil {
		defs = map[string]json.RawMessage{}
	}
	if listed == nil {
		delete(tools, *tool)
		delete(defs, *tool)
	} else {
		tools[*tool], defs[*tool] = listed.Hash, json.RawMessage(listed.Definition)
	}
	sl.Tools, sl.Definitions = tools, defs
	servers := maps.Clone(lock.Servers)
	servers[l.Server] = sl
	lock.Servers = servers
	text := lock.Encode()
	if _, err := pin.ParseLock(text); err != nil {
		return fmt.Errorf("the approved lock file would not read back: %w", err)
	}
	if err := trace.WriteFileAtomic(*pinsFile, text, 0o644); err != nil {
		return err
	}
	if listed == nil {
		fmt.Fprintf(e.stdout, "unpinned tool %s of server %s (the server no longer lists it) in %s\n", pin.Visible(*tool), pin.Visible(l.Server), *pinsFile)
	} else {
		fmt.Fprintf(e.stdout, "re-pinned tool %s of server %s to %s in %s\n", pin.Visible(*tool), pin.Visible(l.Server), listed.Hash, *pinsFile)
	}
	return nil
}

// describeDrift says a drift in one line, names escaped.
func describeDrift(d gatelog.Drift) string {
	tool := "tool " + pin.Visible(d.Tool)
	switch d.Change {
	case pin.Changed:
		return fmt.Sprintf("%s changed: listed %s, pinned %s", tool, d.Seen, d.Pinned)
	case pin.New:
		return fmt.Sprintf("%s is new: listed %s, not pinned", tool, d.Seen)
	case pin.Removed:
		return fmt.Sprintf("%s is pinned (%s) and the server does not list it", tool, d.Pinned)
	case pin.Instructions:
		return fmt.Sprintf("the server's instructions changed: %s, pinned %s", orNone(d.Seen), orNone(d.Pinned))
	}
	return fmt.Sprintf("%s: %s", tool, d.Change)
}

func orNone(h string) string {
	if h == "" {
		return "none"
	}
	return h
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// readLock reads and checks a lock file.
func readLock(name string) (pin.Lock, error) {
	data, err := readInput(name, maxLockSize)
	if err != nil {
		return pin.Lock{}, err
	}
	l, err := pin.ParseLock(data)
	if err != nil {
		return pin.Lock{}, fmt.Errorf("%s: %w", name, err)
	}
	return l, nil
}

// pinSide is one side of a diff: each server's tools' hashes and the
// definitions known, from a lock file or a tools/list result (server "").
type pinSide map[string]map[string]pin.Tool

// readPinSide reads a lock file, or a tools/list result.
func readPinSide(name string) (pinSide, error) {
	data, err := readInput(name, maxLockSize)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Version *json.RawMessage `json:"version"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.Version != nil {
		l, err := pin.ParseLock(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		side := pinSide{}
		for s, sl := range l.Servers {
			side[s] = map[string]pin.Tool{}
			for tool, h := range sl.Tools {
				side[s][tool] = pin.Tool{Name: tool, Hash: h, Definition: sl.Definitions[tool]}
			}
		}
		return side, nil
	}
	var rpc struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &rpc) == nil && rpc.Result != nil {
		data = rpc.Result
	}
	tools, err := pin.ParseTools(data)
	if err != nil {
		return nil, fmt.Errorf("%s: neither a lock file nor a tools/list result: %w", name, err)
	}
	side := pinSide{"": {}}
	for _, t := range tools {
		side[""][t.Name] = t
	}
	return side, nil
}

func pinDiff(e *env, args []string) error {
	fs := flag.NewFlagSet("pin diff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	files, err := parseInterspersed(fs, args, 2)
	if err != nil {
		return err
	}
	if len(files) != 2 {
		return usagef("pin diff: give two files, OLD and NEW\n\n%s", pinUsage)
	}
	old, err := readPinSide(files[0])
	if err != nil {
		return err
	}
	new, err := readPinSide(files[1])
	if err != nil {
		return err
	}
	// Two tools/list results, or a lock file of one server against one:
	// the same server under whatever name.
	if len(old) == 1 && len(new) == 1 {
		on, nn := slices.Collect(maps.Keys(old))[0], slices.Collect(maps.Keys(new))[0]
		if on == "" || nn == "" {
			new = pinSide{on: new[nn]}
		}
	}
	servers := map[string]bool{}
	for s := range old {
		servers[s] = true
	}
	for s := range new {
		servers[s] = true
	}
	differ := false
	for _, s := range slices.Sorted(maps.Keys(servers)) {
		ot, nt := old[s], new[s]
		tools := map[string]bool{}
		for t := range ot {
			tools[t] = true
		}
		for t := range nt {
			tools[t] = true
		}
		var peers []string
		for t := range nt {
			peers = append(peers, t)
		}
		for _, name := range slices.Sorted(maps.Keys(tools)) {
			o, inOld := ot[name]
			n, inNew := nt[name]
			if inOld && inNew && o.Hash == n.Hash {
				continue
			}
			differ = true
			where := ""
			if s != "" {
				where = " of server " + pin.Visible(s)
			}
			if o.Definition == nil && n.Definition == nil || inOld && o.Definition == nil || inNew && n.Definition == nil {
				fmt.Fprintf(e.stdout, "tool %s%s: %s → %s (no definition to compare)\n", pin.Visible(name), where, orNone(o.Hash), orNone(n.Hash))
				continue
			}
			r, err := pin.Compare(o.Definition, n.Definition, peers)
			if err != nil {
				return err
			}
			fmt.Fprint(e.stdout, r.Text())
		}
	}
	if differ {
		return errPinDrift
	}
	fmt.Fprintln(e.stdout, "no difference")
	return nil
}
