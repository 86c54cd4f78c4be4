// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"errors"
	"fmt"

	"github.com/proxyless/xds/bootstrap"
)

func ExampleParse() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{
			"server_uri": "xds.example.com:443",
			"channel_creds": [{"type": "alts"}, {"type": "tls"}],
			"server_features": ["ignore_resource_deletion"]
		}],
		"node": {"id": "n1"},
		"authorities": {"xds.example.com": {}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	sc := cfg.Servers[0]
	fmt.Println(sc.ServerURI, sc.ChannelCreds.Type, sc.ChannelCreds.TLS.RefreshInterval, sc.IgnoreResourceDeletion())
	fmt.Println(cfg.Authorities["xds.example.com"].ClientListenerResourceNameTemplate)
	// Output:
	// xds.example.com:443 tls 10m0s true
	// xdstp://xds.example.com/envoy.config.listener.v3.Listener/%s
}

func ExampleParse_error() {
	_, err := bootstrap.Parse([]byte(`{"xds_servers": [{"server_uri": "a:1", "channel_creds": [{"type": "insecure"}]},
		{"server_uri": "b:1", "channel_creds": [{"type": "alts"}, {"type": "foo"}]}]}`))
	fmt.Println(err)
	var pe *bootstrap.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Field)
	}
	// Output:
	// bootstrap: xds_servers[1].channel_creds: no supported type (saw "alts", "foo")
	// xds_servers[1].channel_creds
}

func ExampleExpandTemplate() {
	fmt.Println(bootstrap.ExpandTemplate("xdstp://auth/envoy.config.listener.v3.Listener/%s", "svc/with space"))
	fmt.Println(bootstrap.ExpandTemplate("%s", "svc/with space"))
	// Output:
	// xdstp://auth/envoy.config.listener.v3.Listener/svc/with%20space
	// svc/with space
}

func ExampleConfig_ListenerResourceName() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "insecure"}]}],
		"authorities": {"xds.example.com": {}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, authority := range []string{"", "xds.example.com", "nowhere"} {
		name, err := cfg.ListenerResourceName(authority, "[::1]:80")
		fmt.Printf("%q %q %v\n", authority, name, err)
	}
	// Output:
	// "" "[::1]:80" <nil>
	// "xds.example.com" "xdstp://xds.example.com/envoy.config.listener.v3.Listener/%5B::1%5D:80" <nil>
	// "nowhere" "" bootstrap: authority "nowhere" is not in the bootstrap's authorities
}

func ExampleFromEnv() {
	// With neither GRPC_XDS_BOOTSTRAP nor GRPC_XDS_BOOTSTRAP_CONFIG set, a
	// program may fall back to a config of its own.
	cfg, err := bootstrap.FromEnv()
	if errors.Is(err, bootstrap.ErrNoBootstrap) {
		cfg, err = bootstrap.Parse([]byte(`{"xds_servers": [{"server_uri": "localhost:18000", "channel_creds": [{"type": "insecure"}]}]}`))
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = cfg
}
