package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// maxCAFile bounds a gateway file's ca_file.
const maxCAFile = 1 << 20

// isGatewayCheck reports whether "policy check" was given -config.
func isGatewayCheck(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "config" {
			return true
		}
	}
	return false
}

// policyCheckGateway is "verity policy check -config gateway.json": the
// gateway file and the policy it names, checked against every upstream's
// tools/list, the tools named as the gateway's clients see them
// (server__tool). A server that cannot be listed (it does not start or
// answer, its secret cannot be read, its auth kind needs what the check
// does not have) is reported, and the check is incomplete: exit 2.
func policyCheckGateway(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("policy check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "the gateway file (verity-mcp -config)")
	timeout := fs.Duration("timeout", 0, "how long each upstream may take to list its tools (default: its start_timeout)")
	if _, err := parseInterspersed(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *config == "":
		return usagef("policy check: -config needs the gateway file")
	case *timeout < 0:
		return usagef("policy check: -timeout must be positive")
	}
	f, err := gateway.Load(*config)
	if err != nil {
		return err
	}
	cfg, compiled, declared, err := loadPolicy(f.Policy)
	if err != nil {
		return err
	}
	var tools, unlisted, drift []string
	serverOf := map[string]string{}
	for _, s := range f.Servers {
		limit := s.StartTimeout
		if *timeout > 0 {
			limit = *timeout
		}
		lctx, cancel := context.WithTimeout(ctx, limit)
		listed, err := listServer(lctx, s, e.stderr)
		cancel()
		if err != nil {
			var se *gateway.SecretError
			if !errors.As(err, &se) { // which names the server itself
				err = fmt.Errorf("server %s: %w", s.Name, err)
			}
			unlisted = append(unlisted, err.Error())
			continue
		}
		where := s.URL
		if len(s.Command) > 0 {
			where = "command " + s.Command[0]
		}
		fmt.Fprintf(e.stdout, "server %s (%s): %d tools\n", s.Name, where, len(listed.names))
		for _, n := range listed.names {
			full := s.Name + gateway.Separator + n
			tools = append(tools, full)
			serverOf[full] = s.Name
		}
		if s.Pins != gateway.PinsFirstUse && s.Pins != gateway.PinsOff {
			lock, err := readLock(s.Pins)
			if err != nil {
				return fmt.Errorf("server %s: pins: %w", s.Name, err)
			}
			found, err := pinFindings(lock, s.Pins, s.Name, listed)
			if err != nil {
				return fmt.Errorf("server %s: pins %s: %w", s.Name, s.Pins, err)
			}
			for _, d := range found {
				drift = append(drift, "server "+s.Name+": "+d)
			}
		}
	}
	findings, notes := lintPolicyOn(cfg, compiled, declared, tools, serverOf)
	findings = append(findings, drift...)
	fmt.Fprintf(e.stdout, "%s: policy %s: %d rules, %d tools on %d of %d servers\n", *config, f.Policy, len(cfg.Tools), len(tools),
		len(f.Servers)-len(unlisted), len(f.Servers))
	for _, fd := range findings {
		fmt.Fprintf(e.stdout, "  %s\n", fd)
	}
	for _, n := range notes {
		fmt.Fprintf(e.stdout, "  note: %s\n", n)
	}
	for _, u := range unlisted {
		fmt.Fprintf(e.stdout, "  not listed: %s\n", u)
	}
	if len(unlisted) > 0 {
		return fmt.Errorf("%d of %d servers could not be listed: the check is incomplete (see \"not listed\" above)", len(unlisted), len(f.Servers))
	}
	if len(findings) > 0 {
		return errPolicyFindings
	}
	fmt.Fprintln(e.stdout, "  ok")
	return nil
}

// listServer lists the tools of one of a gateway file's servers: a
// command started with the environment the gateway gives it, or a
// streamable HTTP server with the file's CA and static header. The other
// auth kinds need a token the gateway fetches when it runs (client
// credentials) or the caller's own (token exchange): those servers are
// not listed, and the error says so.
func listServer(ctx context.Context, s gateway.Server, stderr io.Writer) (upstreamListing, error) {
	if len(s.Command) > 0 {
		env, err := s.Environ(nil)
		if err != nil {
			return upstreamListing{}, err
		}
		return listStdio(ctx, s.Command, env, s.Dir, stderr)
	}
	header := http.Header{}
	if a := s.Auth; a != nil {
		switch a.Kind {
		case gateway.AuthHeader:
			v, err := s.ReadSecret("auth.value")
			if err != nil {
				return upstreamListing{}, err
			}
			header.Set(a.Header, string(v))
		case gateway.AuthClientCredentials:
			return upstreamListing{}, fmt.Errorf("auth kind %s cannot be used by the check (it lists a server with no auth or a static header only): its tools are not listed", a.Kind)
		default:
			return upstreamListing{}, fmt.Errorf("auth kind %s cannot be used by the check (it exchanges a caller's token, which the check has none of): its tools are not listed", a.Kind)
		}
	}
	var ca []byte
	if s.CAFile != "" {
		b, err := readInput(s.CAFile, maxCAFile)
		if err != nil {
			return upstreamListing{}, fmt.Errorf("ca_file: %w", err)
		}
		ca = b
	}
	return listHTTP(ctx, s.URL, ca, header)
}

// serverMatches reports whether a rule's server pattern covers the
// server a tool is on ("" for no named server: never).
func serverMatches(r toolgate.Rule, server string) bool {
	if r.Server == "" {
		return true
	}
	if server == "" {
		return false
	}
	ok, err := path.Match(r.Server, server)
	return err == nil && ok
}

// onServers keeps of a coverage's tools those on servers rule r covers.
func onServers(r toolgate.Rule, cov toolgate.RuleCoverage, serverOf map[string]string) toolgate.RuleCoverage {
	if r.Server == "" {
		return cov
	}
	cov.Tools = slices.DeleteFunc(slices.Clone(cov.Tools), func(t string) bool { return !serverMatches(r, serverOf[t]) })
	for t := range cov.Shadowed {
		if !serverMatches(r, serverOf[t]) {
			delete(cov.Shadowed, t)
		}
	}
	return cov
}
