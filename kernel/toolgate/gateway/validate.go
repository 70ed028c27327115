package gateway

import (
	"fmt"
	"maps"
	"net"
	"net/textproto"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/violation"
)

// The defaults Parse fills in.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultMinBackoff   = 100 * time.Millisecond
	DefaultMaxBackoff   = 10 * time.Second
)

// The bounds of the durations.
const (
	minDuration    = time.Millisecond
	maxTimeout     = 24 * time.Hour
	maxBackoffSpan = time.Hour
)

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// transportHeaders are the headers the streamable HTTP transport sets
// itself: an auth header may not name one.
var transportHeaders = []string{"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Last-Event-Id",
	"Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Mcp-Session-Id", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// checker collects violations.
type checker struct{ vs []Violation }

func (c *checker) add(at, rule, format string, args ...any) {
	c.vs = append(c.vs, Violation{Path: at, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// str returns a string member's value, reporting an empty one.
func (c *checker) str(at string, o opt[string]) string {
	if o.Set && o.V == "" {
		c.add(at, ruleRequired, "not empty")
	}
	return o.V
}

// list returns a list of strings, reporting an empty list or entry.
func (c *checker) list(at string, o opt[[]string]) []string {
	if !o.Set {
		return nil
	}
	if len(o.V) == 0 {
		c.add(at, ruleRequired, "the list has at least one entry")
	}
	for i, s := range o.V {
		if s == "" {
			c.add(violation.Index(at, i), ruleRequired, "not empty")
		}
	}
	return slices.Clone(o.V)
}

// duration reads a Go duration in [minDuration, max]; zero when absent.
func (c *checker) duration(at string, o opt[string], max time.Duration) time.Duration {
	if !o.Set {
		return 0
	}
	if o.V == "" {
		c.add(at, ruleRequired, "not empty")
		return 0
	}
	d, err := time.ParseDuration(o.V)
	switch {
	case err != nil:
		c.add(at, ruleDuration, "%s is not a duration such as \"30s\" or \"5m\"", show(o.V))
	case d < minDuration || d > max:
		c.add(at, ruleDuration, "%s is outside [%s, %s]", o.V, minDuration, max)
	}
	return d
}

// file turns the members read into a File, checking what the reader
// could not.
func (w *fileWire) file(c *checker) File {
	f := File{Version: 1, Policy: w.Policy}
	if !w.Version.ok {
		f.Version = 0
	}
	if w.Policy == "" {
		c.add("/policy", ruleRequired, "not empty")
	}
	if w.Servers != nil && len(w.Servers) == 0 {
		c.add("/servers", ruleRequired, "the list names at least one server")
	}
	seen := map[string]int{}
	for i := range w.Servers {
		at := violation.Index("/servers", i)
		s := w.Servers[i].server(c, at)
		if s.Name != "" {
			if j, ok := seen[s.Name]; ok {
				c.add(at+"/name", ruleDuplicateName, "server %q is named by /servers/%d too", s.Name, j)
			} else {
				seen[s.Name] = i
			}
		}
		f.Servers = append(f.Servers, s)
	}
	return f
}

func (w *serverWire) server(c *checker, at string) Server {
	s := Server{Name: w.Name, Dir: c.str(at+"/dir", w.Dir), URL: c.str(at+"/url", w.URL),
		CAFile: c.str(at+"/ca_file", w.CAFile), Pins: c.str(at+"/pins", w.Pins)}
	if !nameRE.MatchString(w.Name) {
		c.add(at+"/name", ruleName, "%s is not a server name: lower-case letters, digits and \"-\", at most 32, starting with a letter or digit (no \"_\": tool names join server and tool with %q)", show(w.Name), Separator)
	}
	if p := s.Pins; p != "" && p != PinsFirstUse && p != PinsOff && !strings.HasSuffix(p, ".json") {
		c.add(at+"/pins", rulePins, "%s is not %q, %q or a lock file's path (ending in .json, as verity pin writes it)", show(p), PinsFirstUse, PinsOff)
	}
	s.Command = c.list(at+"/command", w.Command)
	s.Env = c.list(at+"/env", w.Env)
	switch {
	case !w.Command.Set && !w.URL.Set:
		c.add(at, ruleTransport, "a server has a command (stdio) or a url (streamable HTTP)")
	case w.Command.Set && w.URL.Set:
		c.add(at+"/url", ruleTransport, "a server has a command or a url, not both")
	case w.URL.Set:
		for _, m := range []struct {
			name string
			set  bool
		}{{"env", w.Env.Set}, {"set_env", w.SetEnv.Set}, {"dir", w.Dir.Set}} {
			if m.set {
				c.add(at+"/"+m.name, ruleTransport, "%s is a command's: this server has a url", m.name)
			}
		}
	default:
		for _, m := range []struct {
			name string
			set  bool
		}{{"ca_file", w.CAFile.Set}, {"auth", w.Auth.Set}} {
			if m.set {
				c.add(at+"/"+m.name, ruleTransport, "%s is a remote server's: this server has a command", m.name)
			}
		}
	}
	if s.URL != "" {
		checkURL(c, at+"/url", s.URL)
	}
	envs := map[string]string{}
	for i, name := range s.Env {
		p := violation.Index(at+"/env", i)
		if name == "" {
			continue
		}
		if !envNameRE.MatchString(name) {
			c.add(p, ruleEnvName, "%s is not an environment variable's name", show(name))
		}
		if first, ok := envs[name]; ok {
			c.add(p, ruleDuplicateEnv, "%s is named at %s too", name, first)
		} else {
			envs[name] = p
		}
	}
	if w.SetEnv.Set {
		if len(w.SetEnv.V) == 0 {
			c.add(at+"/set_env", ruleRequired, "the map sets at least one variable")
		}
		s.SetEnv = make(map[string]Secret, len(w.SetEnv.V))
		for _, name := range slices.Sorted(maps.Keys(w.SetEnv.V)) {
			p := violation.Join(at+"/set_env", name)
			if !envNameRE.MatchString(name) {
				c.add(p, ruleEnvName, "%s is not an environment variable's name", show(name))
			}
			if first, ok := envs[name]; ok {
				c.add(p, ruleDuplicateEnv, "%s is named at %s too: a variable is passed on or set, not both", name, first)
			}
			sec := w.SetEnv.V[name]
			s.SetEnv[name] = *sec.V.secret(c, p)
		}
	}
	if w.Auth.Set {
		s.Auth = w.Auth.V.auth(c, at+"/auth")
	}
	s.StartTimeout = c.duration(at+"/start_timeout", w.StartTimeout, maxTimeout)
	s.CallTimeout = c.duration(at+"/call_timeout", w.CallTimeout, maxTimeout)
	if w.Restart.Set {
		r := &w.Restart.V
		s.Restart.Policy = c.str(at+"/restart/policy", r.Policy)
		if r.Policy.Set && r.Policy.V != "" && r.Policy.V != RestartAlways && r.Policy.V != RestartNever {
			c.add(at+"/restart/policy", ruleEnum, "want one of %s, %s, got %s", RestartAlways, RestartNever, show(r.Policy.V))
		}
		s.Restart.MinBackoff = c.duration(at+"/restart/min_backoff", r.MinBackoff, maxBackoffSpan)
		s.Restart.MaxBackoff = c.duration(at+"/restart/max_backoff", r.MaxBackoff, maxBackoffSpan)
	}
	s.defaults()
	if s.Restart.MinBackoff > s.Restart.MaxBackoff && w.Restart.Set {
		at := at + "/restart/min_backoff"
		if !w.Restart.V.MinBackoff.Set {
			at = at[:len(at)-len("min_backoff")] + "max_backoff"
		}
		c.add(at, ruleDuration, "min_backoff %s is over max_backoff %s", s.Restart.MinBackoff, s.Restart.MaxBackoff)
	}
	return s
}

// defaults fills in what the file left out.
func (s *Server) defaults() {
	if s.StartTimeout == 0 {
		s.StartTimeout = DefaultStartTimeout
	}
	if s.Restart.Policy == "" {
		s.Restart.Policy = RestartAlways
	}
	if s.Restart.MinBackoff == 0 {
		s.Restart.MinBackoff = DefaultMinBackoff
	}
	if s.Restart.MaxBackoff == 0 {
		s.Restart.MaxBackoff = max(DefaultMaxBackoff, s.Restart.MinBackoff)
	}
	if s.Pins == "" {
		s.Pins = PinsFirstUse
	}
}

// checkURL checks a remote endpoint: https, or http to loopback only.
func checkURL(c *checker, at, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		c.add(at, ruleURL, "%s is not a URL", show(raw))
	case u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.Opaque != "":
		c.add(at, ruleURL, "%s is not an absolute https URL", show(raw))
	case u.User != nil:
		c.add(at, ruleURL, "%s holds user information: credentials go in auth, from a secret", show(redact(u)))
	case u.Fragment != "" || strings.Contains(raw, "#"):
		c.add(at, ruleURL, "%s has a fragment", show(raw))
	case u.Scheme == "http" && !loopback(u.Hostname()):
		c.add(at, ruleURL, "%s is http to a host that is not loopback: use https (http only to localhost, 127.0.0.0/8 or ::1)", show(raw))
	}
}

// redact drops a URL's password for a message.
func redact(u *url.URL) string {
	v := *u
	v.User = url.User(u.User.Username())
	return v.String()
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (w *secretWire) secret(c *checker, at string) *Secret {
	s := &Secret{File: c.str(at+"/file", w.File), Env: c.str(at+"/env", w.Env)}
	switch {
	case w.File.Set == w.Env.Set:
		c.add(at, ruleSecret, "a secret names exactly one of file and env")
	case w.Env.Set && s.Env != "" && !envNameRE.MatchString(s.Env):
		c.add(at+"/env", ruleEnvName, "%s is not an environment variable's name", show(s.Env))
	}
	return s
}

// authMembers are the members each kind of auth needs and allows.
var authMembers = map[string]struct{ needs, allows []string }{
	AuthHeader:            {needs: []string{"header", "value"}},
	AuthClientCredentials: {needs: []string{"token_url", "client_id", "client_secret"}, allows: []string{"scopes", "audience", "resource"}},
	AuthTokenExchange:     {needs: []string{"token_url", "client_id", "client_secret", "audience"}, allows: []string{"scopes", "resource"}},
}

var authKinds = []string{AuthHeader, AuthClientCredentials, AuthTokenExchange}

func (w *authWire) auth(c *checker, at string) *Auth {
	a := &Auth{Kind: w.Kind, Header: c.str(at+"/header", w.Header), TokenURL: c.str(at+"/token_url", w.TokenURL),
		ClientID: c.str(at+"/client_id", w.ClientID), Scopes: c.list(at+"/scopes", w.Scopes),
		Audience: c.str(at+"/audience", w.Audience), Resource: c.str(at+"/resource", w.Resource)}
	if w.Value.Set {
		a.Value = w.Value.V.secret(c, at+"/value")
	}
	if w.ClientSecret.Set {
		a.ClientSecret = w.ClientSecret.V.secret(c, at+"/client_secret")
	}
	if w.Kind == "" {
		c.add(at+"/kind", ruleRequired, "not empty")
	}
	if a.TokenURL != "" {
		checkURL(c, at+"/token_url", a.TokenURL)
	}
	if a.Header != "" {
		switch {
		case !headerName(a.Header):
			c.add(at+"/header", ruleHeader, "%s is not an HTTP header name", show(a.Header))
		case slices.Contains(transportHeaders, textproto.CanonicalMIMEHeaderKey(a.Header)):
			c.add(at+"/header", ruleHeader, "%s is set by the transport itself", a.Header)
		}
	}
	kind, ok := authMembers[w.Kind]
	if !ok {
		if w.Kind != "" {
			c.add(at+"/kind", ruleEnum, "want one of %s, got %s", strings.Join(authKinds, ", "), show(w.Kind))
		}
		return a
	}
	set := map[string]bool{"header": w.Header.Set, "value": w.Value.Set, "token_url": w.TokenURL.Set, "client_id": w.ClientID.Set,
		"client_secret": w.ClientSecret.Set, "scopes": w.Scopes.Set, "audience": w.Audience.Set, "resource": w.Resource.Set}
	for _, m := range slices.Sorted(maps.Keys(set)) {
		switch {
		case slices.Contains(kind.needs, m) && !set[m]:
			c.add(at+"/"+m, ruleAuth, "auth kind %s needs %s", w.Kind, m)
		case set[m] && !slices.Contains(kind.needs, m) && !slices.Contains(kind.allows, m):
			c.add(at+"/"+m, ruleAuth, "auth kind %s has no %s", w.Kind, m)
		}
	}
	return a
}

// headerName reports whether s is an HTTP field name (RFC 9110 §5.1: a
// token).
func headerName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// resolve joins the relative paths of f to dir.
func (f *File) resolve(dir string) {
	if dir == "" {
		return
	}
	join := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	join(&f.Policy)
	for i := range f.Servers {
		s := &f.Servers[i]
		join(&s.Dir)
		join(&s.CAFile)
		if s.Pins != PinsFirstUse && s.Pins != PinsOff {
			join(&s.Pins)
		}
		for name, sec := range s.SetEnv {
			join(&sec.File)
			s.SetEnv[name] = sec
		}
		if a := s.Auth; a != nil {
			if a.Value != nil {
				join(&a.Value.File)
			}
			if a.ClientSecret != nil {
				join(&a.ClientSecret.File)
			}
		}
	}
}
