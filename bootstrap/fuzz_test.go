// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary documents to Parse, seeded with every file of
// testdata. Parse must never panic. When it fails, the error is a
// *ParseError; when it succeeds, the Config satisfies the invariants Parse
// documents (checkInvariants), and the methods the client calls on it do
// not panic.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	if len(files) == 0 {
		f.Fatal("no seed files in testdata")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse() error %v (%T) is not a *ParseError", err, err)
			}
			if c != nil {
				t.Fatalf("Parse() returned a Config with error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "bootstrap: ") {
				t.Fatalf("Parse() error %q lacks the bootstrap prefix", err)
			}
			return
		}
		if err := checkInvariants(c); err != nil {
			t.Fatalf("Parse() succeeded on %q with an invalid Config: %v", data, err)
		}
		_ = c.Node.Proto()
		for name := range c.Authorities {
			if _, err := c.ServersForAuthority(name); err != nil {
				t.Fatalf("ServersForAuthority(%q) = %v for a listed authority", name, err)
			}
			if _, err := c.ListenerResourceName(name, "t"); name != "" && err != nil {
				t.Fatalf("ListenerResourceName(%q) = %v for a listed authority", name, err)
			}
		}
	})
}

// checkInvariants returns an error if c breaks a promise of Parse.
func checkInvariants(c *Config) error {
	if len(c.Servers) == 0 {
		return errors.New("no servers")
	}
	for i, sc := range c.Servers {
		if err := checkServer(sc); err != nil {
			return fmt.Errorf("xds_servers[%d]: %w", i, err)
		}
	}
	if c.ClientDefaultListenerResourceNameTemplate == "" {
		return errors.New("empty client default listener template")
	}
	if c.Authorities != nil && len(c.Authorities) == 0 {
		return errors.New("empty, non-nil authorities")
	}
	for name, a := range c.Authorities {
		if a == nil {
			return fmt.Errorf("authority %q is nil", name)
		}
		if prefix := "xdstp://" + url.PathEscape(name) + "/"; !strings.HasPrefix(a.ClientListenerResourceNameTemplate, prefix) {
			return fmt.Errorf("authority %q template %q does not start with %q", name, a.ClientListenerResourceNameTemplate, prefix)
		}
		if a.Servers != nil && len(a.Servers) == 0 {
			return fmt.Errorf("authority %q has empty, non-nil servers", name)
		}
		for i, sc := range a.Servers {
			if err := checkServer(sc); err != nil {
				return fmt.Errorf("authority %q xds_servers[%d]: %w", name, i, err)
			}
		}
	}
	return nil
}

func checkServer(sc *ServerConfig) error {
	if sc == nil {
		return errors.New("nil server")
	}
	if sc.ServerURI == "" {
		return errors.New("empty server URI")
	}
	switch cc := sc.ChannelCreds; cc.Type {
	case CredsInsecure:
		if cc.TLS != nil {
			return errors.New("insecure creds with a TLS config")
		}
	case CredsTLS:
		if cc.TLS == nil {
			return errors.New("tls creds without a TLS config")
		}
		if cc.TLS.RefreshInterval <= 0 {
			return fmt.Errorf("refresh interval %v", cc.TLS.RefreshInterval)
		}
		if (cc.TLS.CertificateFile == "") != (cc.TLS.PrivateKeyFile == "") {
			return errors.New("half a key pair")
		}
	case CredsGoogleDefault:
		if cc.TLS != nil {
			return errors.New("google_default creds with a TLS config")
		}
	default:
		return fmt.Errorf("creds type %q", cc.Type)
	}
	for i, c := range sc.CallCreds {
		if c.Type != CallCredsJWTTokenFile || c.JWTTokenFile == "" {
			return fmt.Errorf("call_creds[%d]: %+v", i, c)
		}
	}
	if sc.Key() == "" {
		return errors.New("empty key")
	}
	return nil
}
