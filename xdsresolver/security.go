// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"strconv"
	"strings"

	"github.com/proxyless/xds/resources"
)

// The TLS configuration of a cluster (gRFC A29, R-25) travels with the
// cluster's priorities (dataplane.Priority.Security) to the router's
// children: each child of a leaf cluster with a security config acquires
// its certificate providers from the Builder's store when it is built,
// puts them (a handshake.ClientHandshakeInfo) in the attributes of every
// address it gives its endpoint policy, and releases them when it is
// closed. The credentials of package xdscreds read them at each
// handshake. A child's key includes its security config (securityKey), so
// a cluster whose security config changes gets new children, and so new
// connections, and the old ones are closed. Package dataplane checks that
// the store can run the instances a cluster names.

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
	if sc.SNI != "" || sc.AutoHostSNI || sc.AutoSNISANValidation { // gRFC A101
		b.WriteString("\x00sni")
		b.WriteString(strconv.Quote(sc.SNI))
		b.WriteString(strconv.FormatBool(sc.AutoHostSNI))
		b.WriteString(strconv.FormatBool(sc.AutoSNISANValidation))
	}
	return b.String()
}
