// SPDX-License-Identifier: Apache-2.0

package handshake

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/credentials/tls/certprovider"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

type fakeProvider struct{ closed *int }

func (fakeProvider) KeyMaterial(context.Context) (*certprovider.KeyMaterial, error) {
	return &certprovider.KeyMaterial{}, nil
}
func (p fakeProvider) Close() { *p.closed++ }

// TestNewClientHandshakeInfo checks what is acquired for a security
// config (roots with WantRoot, the identity with WantIdentity, nothing
// for system roots), that a failure releases what was acquired and names
// the cluster, that Close releases once, and the attribute round trip.
func TestNewClientHandshakeInfo(t *testing.T) {
	var asked []string
	closed := 0
	acquire := func(instance string, opts certprovider.BuildOptions) (certprovider.Provider, error) {
		asked = append(asked, instance+"/"+opts.CertName)
		if opts.WantRoot == opts.WantIdentity {
			t.Errorf("acquire(%s, %+v): want roots or identity", instance, opts)
		}
		if instance == "bad" {
			return nil, errors.New("no such instance")
		}
		return fakeProvider{&closed}, nil
	}

	sc := &resources.SecurityConfig{RootInstanceName: "roots", RootCertName: "r", IdentityInstanceName: "id", IdentityCertName: "i"}
	hi, err := NewClientHandshakeInfo("c", sc, acquire)
	if err != nil || hi.Root == nil || hi.Identity == nil || strings.Join(asked, ",") != "roots/r,id/i" {
		t.Fatalf("NewClientHandshakeInfo = %+v, %v; asked %q", hi, err, asked)
	}
	hi.Close()
	hi.Close()
	if closed != 2 {
		t.Errorf("%d providers closed after Close twice, want 2", closed)
	}

	asked, closed = nil, 0
	_, err = NewClientHandshakeInfo("c", &resources.SecurityConfig{RootInstanceName: "roots", IdentityInstanceName: "bad"}, acquire)
	if err == nil || !strings.Contains(err.Error(), `cluster "c": identity certificate provider: no such instance`) || closed != 1 {
		t.Errorf("a failed identity: %v, %d closed; want the error named and the roots released", err, closed)
	}

	asked = nil
	hi, err = NewClientHandshakeInfo("c", &resources.SecurityConfig{SystemRootCerts: true}, acquire)
	if err != nil || hi.Root != nil || hi.Identity != nil || len(asked) != 0 || !hi.SystemRoots {
		t.Fatalf("system roots: %+v, %v, asked %q; want nothing acquired", hi, err, asked)
	}
	if got := hi.String(); got != `xDS TLS of cluster "c": roots system, 0 SAN matchers` {
		t.Errorf("String() = %s", got)
	}

	addr := SetClientHandshakeInfo(grpcresolver.Address{Addr: "a:1"}, hi)
	if got := ClientHandshakeInfoFromAttributes(addr.Attributes); got != hi {
		t.Errorf("ClientHandshakeInfoFromAttributes = %v, want hi", got)
	}
	if got := ClientHandshakeInfoFromAttributes(nil); got != nil {
		t.Errorf("ClientHandshakeInfoFromAttributes(nil) = %v, want nil", got)
	}
}

// TestServerName checks the SNI precedence of gRFC A101 and the host name
// attribute: the address's host name (without port) with AutoHostSNI,
// else SNI, else none.
func TestServerName(t *testing.T) {
	hi, err := NewClientHandshakeInfo("c", &resources.SecurityConfig{SystemRootCerts: true, SNI: "sni.example", AutoHostSNI: true, AutoSNISANValidation: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hi.SNI != "sni.example" || !hi.AutoHostSNI || !hi.AutoSNISANValidation {
		t.Fatalf("NewClientHandshakeInfo did not keep the SNI fields: %+v", hi)
	}
	tests := []struct {
		sni      string
		auto     bool
		hostname string
		want     string
	}{
		{sni: "sni.example", want: "sni.example"},
		{sni: "sni.example", hostname: "host.example", want: "sni.example"},
		{sni: "sni.example", auto: true, hostname: "host.example", want: "host.example"},
		{sni: "sni.example", auto: true, want: "sni.example"},
		{auto: true, hostname: "host.example:8443", want: "host.example"},
		{auto: true, hostname: "[::1]:8443", want: "::1"},
		{auto: true},
		{},
	}
	for _, tc := range tests {
		hi := &ClientHandshakeInfo{SNI: tc.sni, AutoHostSNI: tc.auto}
		a := SetHostname(grpcresolver.Address{Addr: "10.0.0.1:80"}, tc.hostname)
		if got := HostnameFromAttributes(a.Attributes); got != tc.hostname {
			t.Errorf("HostnameFromAttributes(SetHostname(%q)) = %q", tc.hostname, got)
		}
		if got := hi.ServerName(HostnameFromAttributes(a.Attributes)); got != tc.want {
			t.Errorf("ServerName with sni %q, auto_host_sni %v, host name %q = %q, want %q", tc.sni, tc.auto, tc.hostname, got, tc.want)
		}
	}
	if a := SetHostname(grpcresolver.Address{Addr: "x"}, ""); a.Attributes != nil {
		t.Errorf("SetHostname(\"\") set attributes %v", a.Attributes)
	}
}

// TestProxyAddress checks the proxy attribute's round trip.
func TestProxyAddress(t *testing.T) {
	a := SetProxyAddress(grpcresolver.Address{Addr: "10.0.0.1:80"}, "10.9.9.9:3128")
	if got := ProxyAddressFromAttributes(a.Attributes); got != "10.9.9.9:3128" {
		t.Errorf("ProxyAddressFromAttributes = %q", got)
	}
	if a := SetProxyAddress(grpcresolver.Address{Addr: "x"}, ""); a.Attributes != nil || ProxyAddressFromAttributes(a.Attributes) != "" {
		t.Errorf("SetProxyAddress(\"\") set attributes %v", a.Attributes)
	}
}
