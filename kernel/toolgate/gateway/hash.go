package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/osfile"
)

// readRegular is osfile.ReadFile: regular files only, without blocking,
// at most max bytes.
func readRegular(p string, max int64) ([]byte, error) { return osfile.ReadFile(p, max) }

// The form MarshalJSON writes (encoding/json: empty members left out).
type fileOut struct {
	Version int         `json:"version"`
	Policy  string      `json:"policy"`
	Servers []serverOut `json:"servers"`
}

type serverOut struct {
	Name         string               `json:"name"`
	Command      []string             `json:"command,omitempty"`
	Env          []string             `json:"env,omitempty"`
	SetEnv       map[string]secretOut `json:"set_env,omitempty"`
	Dir          string               `json:"dir,omitempty"`
	URL          string               `json:"url,omitempty"`
	CAFile       string               `json:"ca_file,omitempty"`
	Auth         *authOut             `json:"auth,omitempty"`
	StartTimeout string               `json:"start_timeout,omitempty"`
	CallTimeout  string               `json:"call_timeout,omitempty"`
	Restart      *restartOut          `json:"restart,omitempty"`
	Pins         string               `json:"pins,omitempty"`
}

type restartOut struct {
	Policy     string `json:"policy,omitempty"`
	MinBackoff string `json:"min_backoff,omitempty"`
	MaxBackoff string `json:"max_backoff,omitempty"`
}

type authOut struct {
	Kind         string     `json:"kind"`
	Header       string     `json:"header,omitempty"`
	Value        *secretOut `json:"value,omitempty"`
	TokenURL     string     `json:"token_url,omitempty"`
	ClientID     string     `json:"client_id,omitempty"`
	ClientSecret *secretOut `json:"client_secret,omitempty"`
	Scopes       []string   `json:"scopes,omitempty"`
	Audience     string     `json:"audience,omitempty"`
	Resource     string     `json:"resource,omitempty"`
}

type secretOut struct {
	File string `json:"file,omitempty"`
	Env  string `json:"env,omitempty"`
}

func durationOut(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func secretOf(s *Secret) *secretOut {
	if s == nil {
		return nil
	}
	return &secretOut{File: s.File, Env: s.Env}
}

// MarshalJSON writes f as a gateway file: Parse of what it writes (with
// dir "") returns f, for a File Parse returned.
func (f File) MarshalJSON() ([]byte, error) {
	out := fileOut{Version: f.Version, Policy: f.Policy, Servers: make([]serverOut, len(f.Servers))}
	for i, s := range f.Servers {
		o := serverOut{Name: s.Name, Command: s.Command, Env: s.Env, Dir: s.Dir, URL: s.URL, CAFile: s.CAFile,
			StartTimeout: durationOut(s.StartTimeout), CallTimeout: durationOut(s.CallTimeout), Pins: s.Pins}
		if len(s.SetEnv) > 0 {
			o.SetEnv = make(map[string]secretOut, len(s.SetEnv))
			for k, v := range s.SetEnv {
				o.SetEnv[k] = *secretOf(&v)
			}
		}
		if r := s.Restart; r != (Restart{}) {
			o.Restart = &restartOut{Policy: r.Policy, MinBackoff: durationOut(r.MinBackoff), MaxBackoff: durationOut(r.MaxBackoff)}
		}
		if a := s.Auth; a != nil {
			o.Auth = &authOut{Kind: a.Kind, Header: a.Header, Value: secretOf(a.Value), TokenURL: a.TokenURL, ClientID: a.ClientID,
				ClientSecret: secretOf(a.ClientSecret), Scopes: a.Scopes, Audience: a.Audience, Resource: a.Resource}
		}
		out.Servers[i] = o
	}
	return json.Marshal(out)
}

// Hash returns "sha256:" and the lower-case hex SHA-256 of f's RFC 8785
// canonical JSON as MarshalJSON writes it: the same for two files that
// say the same thing, whatever their spacing, member order, or defaults
// spelled out or left out; different when a server, a path (as
// resolved), a timeout or a secret's source changes. It never reads a
// secret: the hash says where secrets come from, not what they are. A
// gateway records it when it loads or reloads the file.
func (f File) Hash() string {
	b, err := f.MarshalJSON()
	if err == nil {
		b, err = canon.Transform(b)
	}
	if err != nil { // unreachable: the form holds strings, lists and objects
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
