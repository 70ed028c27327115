package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxSecretSize is the largest secret file Secret.Read reads.
const MaxSecretSize = 64 << 10

// Read returns the secret: the content of File (a regular file of at
// most MaxSecretSize bytes, one trailing "\n" or "\r\n" dropped; a
// relative path joined to dir), or the value of the environment variable
// Env. A missing or empty secret, a file that is not a regular file (a
// named pipe, a device: refused without blocking) or is too large, and a
// secret holding a NUL byte are errors.
func (s *Secret) Read(dir string) ([]byte, error) {
	return s.read(dir, os.LookupEnv)
}

func (s *Secret) read(dir string, lookup func(string) (string, bool)) ([]byte, error) {
	var v []byte
	switch {
	case s == nil || (s.File == "") == (s.Env == ""):
		return nil, errors.New("a secret names exactly one of file and env")
	case s.File != "":
		p := s.File
		if dir != "" && !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := readRegular(p, MaxSecretSize)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", p, trimPathError(err, p))
		}
		v = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
		if len(v) == 0 {
			return nil, fmt.Errorf("file %s is empty", p)
		}
	default:
		e, ok := lookup(s.Env)
		if !ok {
			return nil, fmt.Errorf("environment variable %s is not set", s.Env)
		}
		if e == "" {
			return nil, fmt.Errorf("environment variable %s is empty", s.Env)
		}
		v = []byte(e)
	}
	if bytes.IndexByte(v, 0) >= 0 {
		return nil, errors.New("the secret holds a NUL byte")
	}
	return v, nil
}

// trimPathError drops the path an *os.PathError repeats.
func trimPathError(err error, p string) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Path == p {
		return pe.Err
	}
	return err
}

// SecretError is a secret a server's member names that cannot be read:
// its message is one line, "server github: auth.client_secret: file
// /etc/verity/gh: no such file or directory".
type SecretError struct {
	Server string // the server's name
	Member string // "auth.value", "auth.client_secret" or "set_env.NAME"
	Err    error
}

func (e *SecretError) Error() string {
	return "server " + e.Server + ": " + e.Member + ": " + e.Err.Error()
}

func (e *SecretError) Unwrap() error { return e.Err }

// secrets lists the server's secrets by member, in a stable order.
func (s *Server) secrets() []namedSecret {
	var out []namedSecret
	if a := s.Auth; a != nil {
		if a.Value != nil {
			out = append(out, namedSecret{"auth.value", a.Value})
		}
		if a.ClientSecret != nil {
			out = append(out, namedSecret{"auth.client_secret", a.ClientSecret})
		}
	}
	for _, name := range sortedKeys(s.SetEnv) {
		sec := s.SetEnv[name]
		out = append(out, namedSecret{"set_env." + name, &sec})
	}
	return out
}

type namedSecret struct {
	member string
	s      *Secret
}

// ReadSecret reads the secret the server's member names: "auth.value",
// "auth.client_secret" or "set_env.NAME" (Secret.Read, with the paths
// Parse resolved). A header's value may not hold a line break. The error
// is a *SecretError naming the server and the member.
func (s Server) ReadSecret(member string) ([]byte, error) {
	return s.readSecret(member, os.LookupEnv)
}

func (s Server) readSecret(member string, lookup func(string) (string, bool)) ([]byte, error) {
	i := slices.IndexFunc(s.secrets(), func(n namedSecret) bool { return n.member == member })
	if i < 0 {
		return nil, &SecretError{Server: s.Name, Member: member, Err: errors.New("the file names no such secret")}
	}
	v, err := s.secrets()[i].s.read("", lookup)
	if err == nil && strings.HasPrefix(member, "auth.") && bytes.ContainsAny(v, "\r\n") {
		err = errors.New("the secret holds a line break")
	}
	if err != nil {
		return nil, &SecretError{Server: s.Name, Member: member, Err: err}
	}
	return v, nil
}

// CheckSecrets reads every secret of every server and returns the
// *SecretError of each that cannot be read (errors.Join), or nil: a
// gateway checks them at start and on reload, so that a missing secret
// file is found then, naming the server and member, not at the first
// call.
func (f File) CheckSecrets() error {
	var errs []error
	for i := range f.Servers {
		s := &f.Servers[i]
		for _, n := range s.secrets() {
			if _, err := s.readSecret(n.member, os.LookupEnv); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Environ returns the environment of the server's command, "NAME=value"
// sorted by name: each variable Env names that lookup (os.LookupEnv when
// nil) finds, and each of SetEnv read from its secret. Nothing else of
// verity-mcp's environment passes on. The list is never nil, so that
// exec.Cmd.Env set to it never means "inherit everything". The error is
// the *SecretError of the first secret that cannot be read.
func (s Server) Environ(lookup func(string) (string, bool)) ([]string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := make([]string, 0, len(s.Env)+len(s.SetEnv))
	for _, name := range s.Env {
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for _, name := range sortedKeys(s.SetEnv) {
		v, err := s.readSecret("set_env."+name, lookup)
		if err != nil {
			return nil, err
		}
		env = append(env, name+"="+string(v))
	}
	slices.SortFunc(env, func(a, b string) int {
		return strings.Compare(a[:strings.IndexByte(a, '=')], b[:strings.IndexByte(b, '=')])
	})
	return env, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
