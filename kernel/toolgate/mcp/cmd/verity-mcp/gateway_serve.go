package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// gatewayConfig is -config and -require-all: several upstreams, and the
// policy, from a gateway file (package kernel/toolgate/gateway).
type gatewayConfig struct {
	file       string
	requireAll bool

	loaded gateway.File // read by check
	sum    string       // the SHA-256 of its bytes
}

func addGatewayFlags(fs *flag.FlagSet, c *gatewayConfig) {
	fs.StringVar(&c.file, "config", "", "a gateway file: the upstream servers (stdio commands, streamable HTTP URLs) and the policy, instead of -policy and -- command")
	fs.BoolVar(&c.requireAll, "require-all", false, "with -config: exit 1 when any upstream cannot be reached at start (default: serve the others and retry it)")
}

func (c *gatewayConfig) enabled() bool { return c.file != "" }

// check runs after parsing: -config excludes -policy, an upstream
// command and the one-server flags that a gateway file sets per server;
// it reads the file, and the policy it names becomes -policy.
func (c *gatewayConfig) check(cfg *config) error {
	if !c.enabled() {
		if c.requireAll {
			return errors.New("-require-all needs -config")
		}
		return nil
	}
	switch {
	case cfg.policy != "":
		return errors.New("-config and -policy are exclusive: the gateway file names the policy")
	case len(cfg.upstream) > 0:
		return errors.New("-config and a command after -- are exclusive: the gateway file names the servers")
	case cfg.pins.file != pinsFirstUse || cfg.pins.server != "":
		return errors.New("-pins and -pins-server are per server with -config: the gateway file's \"pins\"")
	case cfg.upstreamExit:
		return errors.New("-upstream-exit is per server with -config: \"restart\": {\"policy\": \"never\"}")
	}
	f, sum, err := readGatewayFile(c.file)
	if err != nil {
		return err
	}
	c.loaded, c.sum = f, sum
	cfg.policy = resolve(filepath.Dir(c.file), f.Policy)
	return nil
}

// gatewayRun is a running gateway: its servers behind one Mux.
type gatewayRun struct {
	c      config
	mux    *gatemcp.Mux
	srv    *sdk.Server
	gate   *toolgate.Gate
	log    *trace.Log
	logger *slog.Logger
	stderr io.Writer

	mu      sync.Mutex // one reload at a time
	file    gateway.File
	sum     string
	servers map[string]*gatewayServer
	closed  bool // stopAll ran: no reload starts anything
}

// serveGateway is serve for -config: one server in front of the gateway
// file's upstreams (gatemcp.Mux), each started, restarted and timed out
// on its own; SIGHUP reloads the file and the policy.
func serveGateway(ctx context.Context, c config, policy toolgate.Policy, gate *toolgate.Gate, log *trace.Log,
	stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) (err error) {
	mux := gatemcp.NewMux(logger)
	// Both eras (eras.go); the Tasks extension is relayed for one
	// upstream only (Proxy.ServeTasks), so a gateway does not advertise it.
	srv := sdk.NewServer(&sdk.Implementation{Name: "verity-mcp", Version: version},
		mux.ServerOptions(&sdk.ServerOptions{SupportedProtocolVersions: gatemcp.ProtocolVersions()}))
	gw := &gatewayRun{c: c, mux: mux, srv: srv, gate: gate, log: log, logger: logger, stderr: stderr,
		file: c.gateway.loaded, sum: c.gateway.sum, servers: map[string]*gatewayServer{}}
	// Deferred in this order, the context ends first (a reload starting
	// a server gives up), then every server is stopped.
	defer gw.stopAll()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	for _, s := range gw.file.Servers {
		if err := gw.add(runCtx, s, c.gateway.requireAll); err != nil {
			return err
		}
	}

	listing, _ := parseListing(c.listing)
	inboxLn, inboxURL, err := c.inbox.listen()
	if err != nil {
		return err
	}
	guard, err := gatemcp.New(gate, gatemcp.Options{
		Inbox:            inboxURL,
		Approver:         c.approver,
		Logger:           logger,
		Mux:              mux,
		Listing:          listing,
		Hold:             c.inbox.enabled(),
		SyncWhileRunning: c.syncWhileRunning,
		StateKey:         c.state.key, // -state-key (state.go)
		StateTTL:         c.state.ttl,
		// Keyed as in serve: the principal, whatever its session or era
		// (eras.go).
		Caller: c.callerOf,
		Log:    log,
	})
	if err != nil {
		return err
	}
	srv.AddReceivingMiddleware(guard.Middleware(), mux.Middleware())
	stopHolding := context.AfterFunc(ctx, guard.StopHolding)
	defer stopHolding()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-runCtx.Done():
				return
			case <-hup:
				gw.reload(runCtx)
			}
		}
	}()
	logger.Info("serving", "gateway", c.gateway.file, "servers", mux.Servers(), "tools", len(mux.Tools()), "names", mux.Tools(), "log", c.log,
		"sync_while_running", guard.SyncWhileRunning())

	// The inbox's /pins page reviews one server's pins: a gateway's are
	// re-pinned with lock files (verity pin).
	return serveClients(ctx, runCtx, c, srv, &eraFront{params: mux.ParamHeaders, guard: guard, callerKey: c.httpCallerKey},
		inboxLn, policy, gate, nil, stdin, stdout, logger)
}

// add starts serving s.
func (gw *gatewayRun) add(ctx context.Context, s gateway.Server, requireAll bool) error {
	dir := filepath.Dir(gw.c.gateway.file)
	ps, err := gw.pinsOf(ctx, s, dir)
	if err != nil {
		return err
	}
	p, err := gw.mux.Add(gatemcp.MuxServer{Name: s.Name, CallTimeout: s.CallTimeout, Pins: ps})
	if err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	g := &gatewayServer{spec: s, dir: dir, mux: gw.mux, proxy: p, srv: gw.srv, log: gw.log, logger: gw.logger, stderr: gw.stderr}
	if err := g.start(ctx, requireAll); err != nil {
		gw.mux.Remove(s.Name)
		return err
	}
	gw.servers[s.Name] = g
	return nil
}

// pinsOf opens a server's pins: first-use (the default), off, or a lock
// file, under the server's name.
func (gw *gatewayRun) pinsOf(ctx context.Context, s gateway.Server, dir string) (*gatemcp.Pins, error) {
	opts := gatemcp.PinOptions{Server: s.Name, Logger: gw.logger}
	switch s.Pins {
	case pinsOff:
		return nil, nil
	case "", pinsFirstUse:
	default:
		path := resolve(dir, s.Pins)
		data, err := readRegular(path, pin.MaxLock)
		if err != nil {
			return nil, fmt.Errorf("server %q: pins: %w", s.Name, err)
		}
		l, err := pin.ParseLock(data)
		if err != nil {
			return nil, fmt.Errorf("server %q: pins %s: %w", s.Name, path, err)
		}
		opts.Lock = &l
	}
	ps, err := gatemcp.NewPins(ctx, gw.log, opts)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", s.Name, err)
	}
	return ps, nil
}

// stopAll stops every server.
func (gw *gatewayRun) stopAll() {
	gw.mu.Lock()
	defer gw.mu.Unlock()
	gw.closed = true
	for _, g := range gw.servers {
		g.stop()
	}
}

// reload reads the gateway file and its policy again. A valid new
// version takes effect for the next call (toolgate.Gate.Reload), starts
// the servers it adds, stops those it removes and restarts those whose
// entry changed, and is recorded on the log (gatelog.KindReload) with
// the two files' hashes; an invalid one is refused, each reason one
// line, and the running version stays.
func (gw *gatewayRun) reload(ctx context.Context) {
	gw.mu.Lock()
	defer gw.mu.Unlock()
	if gw.closed || ctx.Err() != nil {
		return
	}
	refuse := func(err error) {
		for _, line := range oneLines(err) {
			gw.logger.Error("reload refused: the running gateway stays", "reason", line)
		}
	}
	path := gw.c.gateway.file
	f, sum, err := readGatewayFile(path)
	if err != nil {
		refuse(err)
		return
	}
	policyPath := resolve(filepath.Dir(path), f.Policy)
	policyBytes, err := readRegular(policyPath, 16<<20)
	if err != nil {
		refuse(fmt.Errorf("policy: %w", err))
		return
	}
	policy, compiled, err := loadPolicy(policyPath)
	if err == nil {
		_, compiled, err = gw.c.inbox.withDefaultTimeout(policy, compiled)
	}
	if err != nil {
		refuse(fmt.Errorf("policy %s: %w", policyPath, err))
		return
	}
	if err := gw.gate.Reload(compiled); err != nil {
		refuse(fmt.Errorf("policy %s: %w", policyPath, err))
		return
	}
	old := map[string]gateway.Server{}
	for _, s := range gw.file.Servers {
		old[s.Name] = s
	}
	var e gatelog.Reload
	e.GatewaySHA256 = sum
	ps := sha256.Sum256(policyBytes)
	e.PolicySHA256 = hex.EncodeToString(ps[:])
	next := map[string]bool{}
	for _, s := range f.Servers {
		next[s.Name] = true
		was, ok := old[s.Name]
		switch {
		case !ok:
			e.Added = append(e.Added, s.Name)
		case !reflect.DeepEqual(was, s):
			e.Restarted = append(e.Restarted, s.Name)
		}
	}
	for _, s := range gw.file.Servers {
		if !next[s.Name] {
			e.Removed = append(e.Removed, s.Name)
		}
	}
	payload, err := canon.Marshal(e)
	if err == nil {
		_, err = gw.log.Append(context.WithoutCancel(ctx), gatelog.KindReload, payload)
	}
	if err != nil {
		gw.logger.Error("recording the reload", "err", err)
	}
	for _, name := range slices.Concat(e.Removed, e.Restarted) {
		if g := gw.servers[name]; g != nil {
			g.stop()
			delete(gw.servers, name)
		}
		gw.mux.Remove(name)
	}
	for _, s := range f.Servers {
		if slices.Contains(e.Added, s.Name) || slices.Contains(e.Restarted, s.Name) {
			if err := gw.add(ctx, s, false); err != nil {
				gw.logger.Error("reload: server not served", "server", s.Name, "err", err.Error())
			}
		}
	}
	var order []string
	for _, s := range f.Servers {
		order = append(order, s.Name)
	}
	gw.mux.Reorder(order)
	gw.file, gw.sum = f, sum
	gw.logger.Info("reloaded", "gateway_sha256", e.GatewaySHA256, "policy_sha256", e.PolicySHA256,
		"added", e.Added, "removed", e.Removed, "restarted", e.Restarted, "tools", len(gw.mux.Tools()))
}
