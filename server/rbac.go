// SPDX-License-Identifier: Apache-2.0

package server

import (
	"crypto/x509"
	"encoding/base64"
	"net/netip"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/proxyless/xds/internal/filterchain"
	"github.com/proxyless/xds/internal/rbac"
)

// rpcInfo is what RBAC sees of one RPC (gRFC A41): the rbac.Request of
// the RBAC engines, which package internal/rbac shares with the net/http
// server.
type rpcInfo struct {
	method string      // the full method name, "/pkg.Service/Method": url_path and :path
	md     metadata.MD // incoming metadata: the headers
	peer   *peer.Peer  // nil when gRPC gave none
}

var _ rbac.Request = (*rpcInfo)(nil)

// Path returns the full method name.
func (r *rpcInfo) Path() string { return r.method }

// Header returns the value RBAC matches a header matcher named name
// against (gRFC A41): ":method" is "POST" and ":path" the method; "te"
// is never present; other headers come from the metadata, the values of
// a multi-valued header joined with ",", those of a binary header
// ("-bin") base64-encoded.
func (r *rpcInfo) Header(name string) (string, bool) {
	switch name {
	case ":method":
		return "POST", true
	case ":path":
		return r.method, true
	case "te":
		return "", false
	}
	vs := r.md.Get(name)
	if len(vs) == 0 {
		return "", false
	}
	if strings.HasSuffix(name, "-bin") {
		enc := make([]string, len(vs))
		for i, v := range vs {
			enc[i] = base64.RawStdEncoding.EncodeToString([]byte(v))
		}
		vs = enc
	}
	if len(vs) == 1 {
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

// tlsInfo returns the connection's TLS info, and whether it has one.
func (r *rpcInfo) tlsInfo() (credentials.TLSInfo, bool) {
	if r.peer == nil {
		return credentials.TLSInfo{}, false
	}
	info, ok := r.peer.AuthInfo.(credentials.TLSInfo)
	return info, ok
}

// PeerCertificates returns the client's certificates of a TLS
// connection.
func (r *rpcInfo) PeerCertificates() ([]*x509.Certificate, bool) {
	info, ok := r.tlsInfo()
	return info.State.PeerCertificates, ok
}

// ServerName returns "": gRPC does not give a server the SNI of its
// connections, and gRFC A41 matches requested_server_name against "".
func (r *rpcInfo) ServerName() string { return "" }

// SPIFFEID returns the client's SPIFFE ID, "" without one: the principal
// of an audit event (gRFC A59).
func (r *rpcInfo) SPIFFEID() string {
	if info, ok := r.tlsInfo(); ok && info.SPIFFEID != nil {
		return info.SPIFFEID.String()
	}
	return ""
}

// RemoteAddr returns the peer's address.
func (r *rpcInfo) RemoteAddr() (netip.AddrPort, bool) {
	if r.peer == nil {
		return netip.AddrPort{}, false
	}
	return filterchain.AddrPort(r.peer.Addr)
}

// LocalAddr returns the server's address of the connection.
func (r *rpcInfo) LocalAddr() (netip.AddrPort, bool) {
	if r.peer == nil {
		return netip.AddrPort{}, false
	}
	return filterchain.AddrPort(r.peer.LocalAddr)
}
