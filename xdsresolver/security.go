// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"errors"
	"strconv"
	"strings"

	"google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// The TLS configuration of a cluster (gRFC A29, R-25) travels with the
// cluster's priorities (priorityConfig.security) to the router's
// children: each child of a leaf cluster with a security config acquires
// its certificate providers from the Builder's store when it is built,
// puts them (an handshake.ClientHandshakeInfo) in the attributes of every
// address it gives its endpoint policy, and releases them when it is
// closed. The credentials of package xdscreds read them at each
// handshake. A child's key includes its security config (securityKey), so
// a cluster whose security config changes gets new children, and so new
// connections, and the old ones are closed.

// checkSecurity returns an error when sc names a certificate provider
// instance that providers cannot run (not in the bootstrap, an unknown
// plugin, an invalid config): the leaf cluster's RPCs then fail with it.
// The client NACKs Clusters that name instances the bootstrap lacks
// so that is only seen with a store made from another
// bootstrap.
func checkSecurity(sc *resources.SecurityConfig, providers *xdscreds.ProviderStore) error {
	if sc == nil {
		return nil
	}
	if providers == nil {
		return errors.New("the cluster has a TLS configuration, and the channel no certificate provider store")
	}
	if !sc.SystemRootCerts {
		if err := providers.Check(sc.RootInstanceName); err != nil {
			return err
		}
	}
	if sc.IdentityInstanceName != "" {
		return providers.Check(sc.IdentityInstanceName)
	}
	return nil
}

// securityKey returns a string that two security configs share exactly
// when they configure the same handshakes; "" for nil (plaintext).
func securityKey(sc *resources.SecurityConfig) string {
	if sc == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("tls")
	for _, s := range []string{sc.RootInstanceName, sc.RootCertName, sc.IdentityInstanceName, sc.IdentityCertName, strconv.FormatBool(sc.SystemRootCerts)} {
		b.WriteByte(0)
		b.WriteString(strconv.Quote(s))
	}
	for _, m := range sc.SubjectAltNameMatchers {
		b.WriteByte(0)
		b.WriteString(m.Kind.String())
		b.WriteString(strconv.FormatBool(m.IgnoreCase))
		b.WriteString(strconv.Quote(m.Value))
	}
	return b.String()
}

// withHandshakeInfo returns copies of eps whose addresses carry hi, for
// the handshakes of their connections; eps when hi is nil.
func withHandshakeInfo(eps []resolver.Endpoint, hi *handshake.ClientHandshakeInfo) []resolver.Endpoint {
	if hi == nil {
		return eps
	}
	out := make([]resolver.Endpoint, len(eps))
	for i, ep := range eps {
		addrs := make([]resolver.Address, len(ep.Addresses))
		for j, a := range ep.Addresses {
			addrs[j] = handshake.SetClientHandshakeInfo(a, hi)
		}
		ep.Addresses = addrs
		out[i] = ep
	}
	return out
}
