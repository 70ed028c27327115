package main

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	upcred "github.com/verity-go/verity/kernel/toolgate/mcp/upstream" // main_test.go has a type upstream
	"github.com/verity-go/verity/trace"
)

// The defaults of a gateway server's timeouts and restart policy
// (gateway.Server).
const (
	defaultStartTimeout = 30 * time.Second
)

// gatewayServer runs one upstream of a gateway: it starts the command or
// connects to the URL, records it on the log (gatelog.KindSpawn,
// KindConnect), attaches it to the Mux, and when it exits or its
// connection ends detaches it — its tools leave the list — and, under
// restart policy "always" (the default), starts it again after
// min_backoff (100ms), doubling after each try that failed or ran less
// than a minute, up to max_backoff (10s); under "never" it stays down.
// A server that cannot be reached at start is retried the same way.
type gatewayServer struct {
	spec   gateway.Server
	dir    string // the gateway file's directory
	mux    *gatemcp.Mux
	proxy  *gatemcp.Proxy
	srv    *sdk.Server
	log    *trace.Log
	logger *slog.Logger
	stderr io.Writer

	mu      sync.Mutex
	up      *sdk.ClientSession
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (g *gatewayServer) startTimeout() time.Duration {
	if g.spec.StartTimeout > 0 {
		return g.spec.StartTimeout
	}
	return defaultStartTimeout
}

func (g *gatewayServer) backoffs() (lo, hi time.Duration) {
	lo, hi = g.spec.Restart.MinBackoff, g.spec.Restart.MaxBackoff
	if lo <= 0 {
		lo = minBackoff
	}
	if hi <= 0 {
		hi = max(maxBackoff, lo)
	}
	return lo, hi
}

// connect starts or reaches the server, within its start timeout, and
// attaches it. Every failure is one line naming the server.
func (g *gatewayServer) connect(ctx context.Context) (*sdk.ClientSession, error) {
	sctx, cancel := context.WithTimeout(ctx, g.startTimeout())
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "verity-mcp", Version: version}, g.proxy.ClientOptions())
	client.AddReceivingMiddleware(g.proxy.RelayMiddleware())
	name := g.spec.Name
	var up *sdk.ClientSession
	var kind string
	var payload []byte
	var err error
	if len(g.spec.Command) > 0 {
		up, kind, payload, err = g.spawn(sctx, client)
	} else {
		up, kind, payload, err = g.dial(sctx, client)
	}
	if err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("server %q: not started within its start_timeout %s: %v", name, g.startTimeout(), err)
		}
		return nil, fmt.Errorf("server %q: %v", name, err)
	}
	// On the log before any call can reach it.
	if _, err := g.log.Append(context.WithoutCancel(ctx), kind, payload); err != nil {
		_ = up.Close()
		return nil, fmt.Errorf("server %q: recording its %s: %w", name, kind, err)
	}
	if err := g.mux.Attach(sctx, g.srv, name, up); err != nil {
		_ = up.Close()
		if strings.HasPrefix(err.Error(), fmt.Sprintf("server %q", name)) {
			return nil, err
		}
		return nil, fmt.Errorf("server %q: %w", name, err)
	}
	return up, nil
}

// spawn starts the command over stdio: in Dir, with an environment of
// only Env's variables (from verity-mcp's own) and SetEnv's secrets.
func (g *gatewayServer) spawn(ctx context.Context, client *sdk.Client) (*sdk.ClientSession, string, []byte, error) {
	env, err := serverEnv(g.spec)
	if err != nil {
		return nil, "", nil, err
	}
	argv := g.spec.Command
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = resolve(g.dir, g.spec.Dir)
	cmd.Env = env
	cmd.Stderr = g.stderr
	up, err := client.Connect(ctx, g.proxy.Transport(&sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}), nil)
	if err != nil {
		return nil, "", nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	pid := 0
	if cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	args, _ := json.Marshal(slices.Concat([]string{}, argv[1:]))
	sum := sha256.Sum256(args)
	e := gatelog.Spawn{Server: g.spec.Name, Command: argv[0], ArgumentsSHA256: hex.EncodeToString(sum[:]), PID: pid, Protocol: protocolOf(up)}
	payload, err := canon.Marshal(e)
	if err != nil {
		_ = up.Close()
		return nil, "", nil, err
	}
	g.logger.Info("server started", "server", g.spec.Name, "command", argv[0], "pid", pid, "protocol", e.Protocol)
	return up, gatelog.KindSpawn, payload, nil
}

// dial connects to the remote streamable HTTP server, TLS verified.
func (g *gatewayServer) dial(ctx context.Context, client *sdk.Client) (*sdk.ClientSession, string, []byte, error) {
	hc, err := upstreamHTTPClient(g.spec, g.dir)
	if err != nil {
		return nil, "", nil, err
	}
	rec := &peerRecorder{next: hc.Transport}
	if rec.next == nil {
		rec.next = http.DefaultTransport
	}
	recorded := *hc
	recorded.Transport = rec
	t := &sdk.StreamableClientTransport{Endpoint: g.spec.URL, HTTPClient: &recorded, MaxRetries: 2}
	up, err := client.Connect(ctx, g.proxy.Transport(t), nil)
	if err != nil {
		return nil, "", nil, fmt.Errorf("connecting to %s: %w", g.spec.URL, err)
	}
	e := gatelog.Connect{Server: g.spec.Name, URL: g.spec.URL, Protocol: protocolOf(up)}
	if cert := rec.peer(); cert != nil {
		sum := sha256.Sum256(cert.Raw)
		e.TLSSubject, e.TLSSHA256 = cert.Subject.String(), hex.EncodeToString(sum[:])
	}
	payload, err := canon.Marshal(e)
	if err != nil {
		_ = up.Close()
		return nil, "", nil, err
	}
	g.logger.Info("server connected", "server", g.spec.Name, "url", g.spec.URL, "protocol", e.Protocol, "tls_subject", e.TLSSubject)
	return up, gatelog.KindConnect, payload, nil
}

// protocolOf is the protocol version a session negotiated.
func protocolOf(up *sdk.ClientSession) string {
	if r := up.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// upstreamHTTPClient is the HTTP client of a remote server
// (upcred.NewHTTPClient): TLS 1.2 or later verified against the system's
// CAs, or only ca_file's when the file names one; no redirect followed
// (a credential is never sent to another address); the server's own
// credential ("auth": a header from a secret, OAuth client credentials,
// or an RFC 8693 exchange of the caller's token), never the client's
// token; no overall timeout (a call's own bounds it). It is the one place
// an upstream's HTTP requests are made from.
func upstreamHTTPClient(s gateway.Server, dir string) (*http.Client, error) {
	return upcred.NewHTTPClient(s, dir, upcred.Options{})
}

// peerRecorder keeps the TLS peer certificate of the first response.
type peerRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	leaf *x509.Certificate
}

func (p *peerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err == nil && resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		p.mu.Lock()
		if p.leaf == nil {
			p.leaf = resp.TLS.PeerCertificates[0]
		}
		p.mu.Unlock()
	}
	return resp, err
}

func (p *peerRecorder) peer() *x509.Certificate {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaf
}

// serverEnv is a command's environment: Env's variables that verity-mcp's
// own environment sets, and SetEnv's secrets, nothing else
// (gateway.Server.Environ; never nil, which exec.Cmd would read as "all
// of verity-mcp's").
func serverEnv(s gateway.Server) ([]string, error) {
	env, err := s.Environ(os.LookupEnv)
	if err != nil { // named by the caller: "server NAME: set_env.X: …"
		return nil, errors.New(strings.TrimPrefix(err.Error(), "server "+s.Name+": "))
	}
	return env, nil
}

// start connects the server and then watches it until stop. With
// requireAll a failure to connect is returned (nothing left running);
// without, it is logged in one line and the server retried per its
// restart policy.
func (g *gatewayServer) start(ctx context.Context, requireAll bool) error {
	rctx, cancel := context.WithCancel(ctx)
	g.cancel, g.done = cancel, make(chan struct{})
	up, err := g.connect(rctx)
	if err != nil {
		if requireAll {
			cancel()
			close(g.done)
			return fmt.Errorf("%w (-require-all)", err)
		}
		g.logger.Error("server unreachable at start: serving the others, retrying it per its restart policy", "server", g.spec.Name, "err", err.Error())
	}
	g.mu.Lock()
	g.up = up
	g.mu.Unlock()
	go g.watch(rctx, up)
	return nil
}

// watch restarts the server whenever its session ends.
func (g *gatewayServer) watch(ctx context.Context, up *sdk.ClientSession) {
	defer close(g.done)
	lo, hi := g.backoffs()
	backoff := lo
	name := g.spec.Name
	for {
		if up != nil {
			began := time.Now()
			werr := up.Wait()
			g.mux.Detach(name, up)
			if ctx.Err() != nil {
				return
			}
			if time.Since(began) >= stableRun {
				backoff = lo
			}
			g.logger.Error("server exited: its tools leave the list", "server", name, "err", fmt.Sprint(werr))
		}
		if g.spec.Restart.Policy == "never" {
			g.logger.Error("server down and not restarted (restart policy never)", "server", name)
			return
		}
		g.logger.Info("restarting the server", "server", name, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, hi)
		next, err := g.connect(ctx)
		if err != nil {
			g.logger.Error("server did not start", "server", name, "err", err.Error())
			up = nil
			continue
		}
		g.mu.Lock()
		if g.stopped {
			g.mu.Unlock()
			_ = next.Close()
			return
		}
		g.up = next
		g.mu.Unlock()
		g.logger.Info("server restarted", "server", name)
		up = next
	}
}

// stop ends the watch and closes the server's session (a command is
// terminated).
func (g *gatewayServer) stop() {
	g.mu.Lock()
	g.stopped = true
	up := g.up
	g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
	if up != nil {
		_ = up.Close()
	}
	if g.done != nil {
		<-g.done
	}
	g.mux.Detach(g.spec.Name, up)
}
