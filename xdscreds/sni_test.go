// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"crypto/tls"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil/certs"
)

// sniBackend is a TLS backend that presents, for each handshake, the
// certificate whose DNS SANs match the SNI the client sent (the first
// one when none does, or no SNI came), and records the SNIs it saw.
type sniBackend struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func startSNIBackend(t *testing.T, leaves ...*certs.Leaf) *sniBackend {
	t.Helper()
	sb := &sniBackend{}
	cfg := &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		sb.mu.Lock()
		sb.seen = append(sb.seen, hello.ServerName)
		sb.mu.Unlock()
		for _, l := range leaves {
			if hello.ServerName != "" && l.Cert.VerifyHostname(hello.ServerName) == nil {
				return &l.TLS, nil
			}
		}
		return &leaves[0].TLS, nil
	}}
	sb.addr = startBackend(t, cfg).Address
	return sb
}

// lastSNI returns the SNI of the last handshake, and whether there was
// one.
func (sb *sniBackend) lastSNI() (string, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.seen) == 0 {
		return "", false
	}
	return sb.seen[len(sb.seen)-1], true
}

// dialHost is dial with the address's host name (auto_host_sni) set.
func dialHost(t *testing.T, addr, hostname string, hi *handshake.ClientHandshakeInfo, creds credentials.TransportCredentials) testgrpc.TestServiceClient {
	t.Helper()
	r := manual.NewBuilderWithScheme("test")
	a := handshake.SetHostname(handshake.SetClientHandshakeInfo(grpcresolver.Address{Addr: addr}, hi), hostname)
	r.InitialState(grpcresolver.State{Addresses: []grpcresolver.Address{a}})
	cc, err := grpc.NewClient(r.Scheme()+":///channel.authority.example", grpc.WithResolvers(r), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

// TestClientCredentials_SNI checks the SNI of gRFC A101 over real
// connections to a backend that picks its certificate by SNI, as a TLS
// server hosting several names does: which name the client sends (the
// endpoint's host name with auto_host_sni, else sni, else none, never the
// channel's authority), and which certificate it accepts (with
// auto_sni_san_validation, one valid for that name, in place of
// match_subject_alt_names). The scenarios are those of grpc-go's
// test/xds/xds_client_sni_test.go.
func TestClientCredentials_SNI(t *testing.T) {
	p := newPKI(t)
	// The server's default certificate (no SNI, or an SNI it does not
	// have) and one for *.test.example.com, the SAN of grpc-go's test
	// certificates.
	other := issue(t, p.caA, certs.Options{SPIFFEID: "spiffe://a.example/other", DNSNames: []string{"other.example.com"}})
	wildcard := issue(t, p.caA, certs.Options{SPIFFEID: "spiffe://a.example/backend", DNSNames: []string{"*.test.example.com"}})
	b := startSNIBackend(t, other, wildcard)
	creds := newCreds(t)
	hi := func(mod func(*handshake.ClientHandshakeInfo)) *handshake.ClientHandshakeInfo {
		h := &handshake.ClientHandshakeInfo{Cluster: "c", Root: rootsOf(p.caA), Identity: identityOf(p.client)}
		mod(h)
		return h
	}
	tests := []struct {
		name     string
		hostname string // the endpoint's host name
		hi       *handshake.ClientHandshakeInfo
		wantSNI  string // the SNI the backend saw
		wantErr  string // in the UNAVAILABLE status message; "" for success
	}{
		{
			// TestClientSideXDS_SNISANValidation, cluster1.
			name:    "sni valid for the certificate",
			hi:      hi(func(h *handshake.ClientHandshakeInfo) { h.SNI, h.AutoSNISANValidation = "x.test.example.com", true }),
			wantSNI: "x.test.example.com",
		},
		{
			// TestClientSideXDS_SNISANValidation, cluster2.
			name:    "sni not valid for the certificate",
			hi:      hi(func(h *handshake.ClientHandshakeInfo) { h.SNI, h.AutoSNISANValidation = "wrong.sni.domain", true }),
			wantSNI: "wrong.sni.domain",
			wantErr: `cluster "c": the server certificate's SANs (DNS "other.example.com"; URI "spiffe://a.example/other") do not match the SNI "wrong.sni.domain" (auto_sni_san_validation)`,
		},
		{
			// TestClientSideXDS_AutoHostSNI: the host name wins.
			name:     "auto host sni",
			hostname: "x.test.example.com",
			hi: hi(func(h *handshake.ClientHandshakeInfo) {
				h.SNI, h.AutoHostSNI, h.AutoSNISANValidation = "wrong.sni.domain", true, true
			}),
			wantSNI: "x.test.example.com",
		},
		{
			// TestClientSideXDS_AutoHostSNI_LogicalDNS: the DNS name of a
			// LOGICAL_DNS cluster, whose port is not part of the SNI.
			name:     "auto host sni of a host name with port",
			hostname: "x.test.example.com:443",
			hi:       hi(func(h *handshake.ClientHandshakeInfo) { h.AutoHostSNI, h.AutoSNISANValidation = true, true }),
			wantSNI:  "x.test.example.com",
		},
		{
			// TestClientSideXDS_AutoHostSNI_MultipleEndpoints, priority 0.
			name:     "auto host sni of a host name the certificate lacks",
			hostname: "wrong.sni.domain",
			hi:       hi(func(h *handshake.ClientHandshakeInfo) { h.AutoHostSNI, h.AutoSNISANValidation = true, true }),
			wantSNI:  "wrong.sni.domain",
			wantErr:  `do not match the SNI "wrong.sni.domain"`,
		},
		{
			// gRFC A101: without a host name, sni applies.
			name: "auto host sni without host name",
			hi: hi(func(h *handshake.ClientHandshakeInfo) {
				h.SNI, h.AutoHostSNI, h.AutoSNISANValidation = "y.test.example.com", true, true
			}),
			wantSNI: "y.test.example.com",
		},
		{
			// TestClientSideXDS_FallbackSANMatchers, cluster1: no SNI, so
			// match_subject_alt_names apply.
			name: "san validation without sni uses the matchers",
			hi: hi(func(h *handshake.ClientHandshakeInfo) {
				h.AutoSNISANValidation, h.SANMatchers = true, []resources.StringMatcher{exact("*.example.com"), exact("other.example.com")}
			}),
			wantSNI: "",
		},
		{
			// TestClientSideXDS_FallbackSANMatchers, cluster2.
			name: "san validation without sni, matchers not matching",
			hi: hi(func(h *handshake.ClientHandshakeInfo) {
				h.AutoSNISANValidation, h.SANMatchers = true, []resources.StringMatcher{exact("wrong.san.domain")}
			}),
			wantSNI: "",
			wantErr: "match none of match_subject_alt_names",
		},
		{
			// sni without auto_sni_san_validation: the matchers, not the
			// SNI, authorize the server.
			name: "sni without san validation",
			hi: hi(func(h *handshake.ClientHandshakeInfo) {
				h.SNI, h.SANMatchers = "incorrect.sni", []resources.StringMatcher{exact("spiffe://a.example/other")}
			}),
			wantSNI: "incorrect.sni",
		},
		{
			name: "sni without san validation, matchers not matching",
			hi: hi(func(h *handshake.ClientHandshakeInfo) {
				h.SNI, h.SANMatchers = "x.test.example.com", []resources.StringMatcher{exact("wrong.san.domain")}
			}),
			wantSNI: "x.test.example.com",
			wantErr: "match none of match_subject_alt_names",
		},
		{
			// gRFC A101: no SNI at all, not the channel's authority.
			name:    "no sni",
			hi:      hi(func(*handshake.ClientHandshakeInfo) {}),
			wantSNI: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			c := dialHost(t, b.addr, tc.hostname, tc.hi, creds)
			_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("UnaryCall() = %v, want success", err)
			case tc.wantErr != "" && (status.Code(err) != codes.Unavailable || !containsQuoted(status.Convert(err).Message(), tc.wantErr)):
				t.Fatalf("UnaryCall() = %v, want UNAVAILABLE with %q", err, tc.wantErr)
			}
			if got, ok := b.lastSNI(); !ok || got != tc.wantSNI {
				t.Errorf("the backend saw SNI %q (handshake: %v), want %q", got, ok, tc.wantSNI)
			}
		})
	}
}
