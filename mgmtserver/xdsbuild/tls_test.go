// SPDX-License-Identifier: Apache-2.0

package xdsbuild_test

import (
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/resources"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// TestUpstreamTLS_Valid checks that clusters with UpstreamTLS pass gRPC's
// validation, with the instances of a bootstrap that
// WithCertificateProviders wrote.
func TestUpstreamTLS_Valid(t *testing.T) {
	b, err := xdsbuild.WithCertificateProviders([]byte(`{"xds_servers":[{"server_uri":"x","channel_creds":[{"type":"insecure"}]}]}`), map[string]xdsbuild.FileWatcher{
		"roots": {CACertificateFile: "/ca.pem", RefreshInterval: 100 * time.Millisecond},
		"id":    {CertificateFile: "/d/c.pem", PrivateKeyFile: "/d/k.pem"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(cfg.CertificateProviders["roots"].Config); got != `{"ca_certificate_file":"/ca.pem","refresh_interval":"0.1s"}` {
		t.Errorf("roots config = %s", got)
	}
	opt := resources.WithCertificateProviderInstances(cfg.CertificateProviderNames()...)
	for _, c := range []*v3clusterpb.Cluster{
		xdsbuild.WithUpstreamTLS(xdsbuild.Cluster("mtls", ""), xdsbuild.UpstreamTLSOptions{RootInstance: "roots", IdentityInstance: "id", SubjectAltNames: []*v3matcherpb.StringMatcher{xdsbuild.ExactSAN("spiffe://a/b"), xdsbuild.PrefixSAN("spiffe://a/")}}),
		xdsbuild.WithUpstreamTLS(xdsbuild.Cluster("system", ""), xdsbuild.UpstreamTLSOptions{SystemRootCerts: true}),
	} {
		if err := resources.Validate(xdsbuild.MarshalAny(c), opt); err != nil {
			t.Errorf("Validate(%s): %v", c.GetName(), err)
		}
	}
	if _, err := xdsbuild.WithCertificateProviders([]byte(`[]`), nil); err == nil {
		t.Error("WithCertificateProviders of a JSON array succeeded")
	}
}
