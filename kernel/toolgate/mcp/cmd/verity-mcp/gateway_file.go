package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// maxGatewayFile bounds a gateway file's size.
const maxGatewayFile = 1 << 20

// readGatewayFile reads the gateway file at path and returns it, with
// the SHA-256 (hex) of its bytes.
//
// It is verity-mcp's reader of the file's members, as package gateway
// documents them (gateway.File), until gateway.Load, the strict reader
// with the published schema, takes its place: one JSON object, no unknown
// member, durations as Go durations, then checkGateway's rules.
func readGatewayFile(path string) (gateway.File, string, error) {
	data, err := readRegular(path, maxGatewayFile)
	if err != nil {
		return gateway.File{}, "", err
	}
	sum := sha256.Sum256(data)
	var w wireFile
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return gateway.File{}, "", fmt.Errorf("%s: %w", path, err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return gateway.File{}, "", fmt.Errorf("%s: data after the gateway object", path)
	}
	f, err := w.file()
	if err == nil {
		err = checkGateway(f)
	}
	if err != nil {
		return gateway.File{}, "", fmt.Errorf("%s: %w", path, err)
	}
	return f, hex.EncodeToString(sum[:]), nil
}

// readRegular reads a regular file of at most max bytes.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: over %d bytes", path, max)
	}
	return data, nil
}

type wireFile struct {
	Version int          `json:"version"`
	Policy  string       `json:"policy"`
	Servers []wireServer `json:"servers"`
}

type wireServer struct {
	Name         string                    `json:"name"`
	Command      []string                  `json:"command"`
	Env          []string                  `json:"env"`
	SetEnv       map[string]gateway.Secret `json:"set_env"`
	Dir          string                    `json:"dir"`
	URL          string                    `json:"url"`
	CAFile       string                    `json:"ca_file"`
	Auth         *json.RawMessage          `json:"auth"`
	StartTimeout string                    `json:"start_timeout"`
	CallTimeout  string                    `json:"call_timeout"`
	Restart      *struct {
		Policy     string `json:"policy"`
		MinBackoff string `json:"min_backoff"`
		MaxBackoff string `json:"max_backoff"`
	} `json:"restart"`
	Pins string `json:"pins"`
}

func (w wireFile) file() (gateway.File, error) {
	f := gateway.File{Version: w.Version, Policy: w.Policy}
	for i, ws := range w.Servers {
		s := gateway.Server{Name: ws.Name, Command: ws.Command, Env: ws.Env, SetEnv: ws.SetEnv, Dir: ws.Dir, URL: ws.URL,
			CAFile: ws.CAFile, Pins: ws.Pins}
		if ws.Auth != nil {
			s.Auth = &gateway.Auth{}
		}
		dur := func(member, v string, into *time.Duration) error {
			if v == "" {
				return nil
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("/servers/%d/%s: %q is not a Go duration of at least 0", i, member, v)
			}
			*into = d
			return nil
		}
		errs := []error{dur("start_timeout", ws.StartTimeout, &s.StartTimeout), dur("call_timeout", ws.CallTimeout, &s.CallTimeout)}
		if r := ws.Restart; r != nil {
			s.Restart.Policy = r.Policy
			errs = append(errs, dur("restart/min_backoff", r.MinBackoff, &s.Restart.MinBackoff), dur("restart/max_backoff", r.MaxBackoff, &s.Restart.MaxBackoff))
		}
		if err := errors.Join(errs...); err != nil {
			return gateway.File{}, err
		}
		f.Servers = append(f.Servers, s)
	}
	return f, nil
}

var (
	gatewayServerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	envName           = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// checkGateway checks what the running gateway relies on, each problem
// one line naming the server.
func checkGateway(f gateway.File) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if f.Version != 1 {
		bad("version %d: want 1", f.Version)
	}
	if f.Policy == "" {
		bad("no policy: name the policy file (\"policy\")")
	}
	if len(f.Servers) == 0 {
		bad("no servers: name at least one (\"servers\")")
	}
	seen := map[string]bool{}
	for _, s := range f.Servers {
		switch {
		case !gatewayServerName.MatchString(s.Name):
			bad("server %q: a name is 1 to 32 of a-z, 0-9 and '-', starting with a letter or digit", s.Name)
			continue
		case seen[s.Name]:
			bad("server %q: named twice: server names are unique", s.Name)
			continue
		}
		seen[s.Name] = true
		if (len(s.Command) > 0) == (s.URL != "") {
			bad("server %q: give exactly one of command and url", s.Name)
		}
		if len(s.Command) > 0 && s.Command[0] == "" {
			bad("server %q: an empty command", s.Name)
		}
		if s.URL != "" {
			if err := checkUpstreamURL(s.URL); err != nil {
				bad("server %q: url: %v", s.Name, err)
			}
			if len(s.Env) > 0 || len(s.SetEnv) > 0 || s.Dir != "" {
				bad("server %q: env, set_env and dir are for a command", s.Name)
			}
		} else if s.CAFile != "" {
			bad("server %q: ca_file is for a url", s.Name)
		}
		if s.Auth != nil {
			bad("server %q: auth: upstream credentials are not supported by this verity-mcp yet", s.Name)
		}
		for _, k := range s.Env {
			if !envName.MatchString(k) {
				bad("server %q: env %q is not a variable name", s.Name, k)
			}
		}
		for k, sec := range s.SetEnv {
			if !envName.MatchString(k) {
				bad("server %q: set_env %q is not a variable name", s.Name, k)
			}
			if (sec.File == "") == (sec.Env == "") {
				bad("server %q: set_env %s: give exactly one of file and env", s.Name, k)
			}
		}
		switch s.Restart.Policy {
		case "", "always", "never":
		default:
			bad("server %q: restart policy %q: want always or never", s.Name, s.Restart.Policy)
		}
		if s.Restart.MaxBackoff > 0 && s.Restart.MinBackoff > s.Restart.MaxBackoff {
			bad("server %q: restart min_backoff %s is over max_backoff %s", s.Name, s.Restart.MinBackoff, s.Restart.MaxBackoff)
		}
	}
	return errors.Join(errs...)
}

// checkUpstreamURL allows https, and http only to a loopback address.
func checkUpstreamURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL")
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", raw)
		}
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
			return nil
		}
		return fmt.Errorf("%q: http only to a loopback address; use https", raw)
	}
	return fmt.Errorf("%q: want https (or http to a loopback address)", raw)
}

// resolve is path relative to dir, the gateway file's directory.
func resolve(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// oneLines splits an error (errors.Join's) into its lines.
func oneLines(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
