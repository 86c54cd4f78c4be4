// SPDX-License-Identifier: Apache-2.0

package handshake

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/credentials/tls/certprovider"

	"github.com/proxyless/xds/resources"
)

// TestNewServerHandshakeInfo checks what is acquired for a filter chain's
// security config (the identity with WantIdentity, the roots, if any,
// with WantRoot), that a failure releases what was acquired and names the
// chain, and that Close releases once.
func TestNewServerHandshakeInfo(t *testing.T) {
	var asked []string
	closed := 0
	acquire := func(instance string, opts certprovider.BuildOptions) (certprovider.Provider, error) {
		asked = append(asked, instance+"/"+opts.CertName)
		if opts.WantRoot == opts.WantIdentity || opts.WantIdentity != (instance == "id" || instance == "bad-id") {
			t.Errorf("acquire(%s, %+v): want the identity or the roots", instance, opts)
		}
		if strings.HasPrefix(instance, "bad") {
			return nil, errors.New("no such instance")
		}
		return fakeProvider{&closed}, nil
	}

	sc := &resources.ServerSecurityConfig{IdentityInstanceName: "id", IdentityCertName: "i", RootInstanceName: "roots", RootCertName: "r", RequireClientCertificate: true}
	hi, err := NewServerHandshakeInfo(`"c"`, sc, acquire)
	if err != nil || hi.Root == nil || hi.Identity == nil || !hi.RequireClientCert || strings.Join(asked, ",") != "id/i,roots/r" {
		t.Fatalf("NewServerHandshakeInfo = %+v, %v; asked %q", hi, err, asked)
	}
	hi.Close()
	hi.Close()
	if closed != 2 {
		t.Errorf("%d providers closed after Close twice, want 2", closed)
	}

	asked, closed = nil, 0
	hi, err = NewServerHandshakeInfo(`"c"`, &resources.ServerSecurityConfig{IdentityInstanceName: "id"}, acquire)
	if err != nil || hi.Root != nil || len(asked) != 1 {
		t.Fatalf("TLS only: %+v, %v, asked %q; want the identity only", hi, err, asked)
	}
	hi.Close()

	closed = 0
	_, err = NewServerHandshakeInfo(`"c"`, &resources.ServerSecurityConfig{IdentityInstanceName: "id", RootInstanceName: "bad-roots"}, acquire)
	if err == nil || !strings.Contains(err.Error(), `filter chain "c": root certificate provider: no such instance`) || closed != 1 {
		t.Errorf("failed roots: %v, %d closed; want the error named and the identity released", err, closed)
	}
	_, err = NewServerHandshakeInfo(`"c"`, &resources.ServerSecurityConfig{IdentityInstanceName: "bad-id"}, acquire)
	if err == nil || !strings.Contains(err.Error(), `filter chain "c": identity certificate provider`) {
		t.Errorf("failed identity: %v", err)
	}
}
