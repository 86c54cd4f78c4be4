// SPDX-License-Identifier: Apache-2.0

package grpctransport

import (
	"google.golang.org/grpc/connectivity"

	"github.com/proxyless/xds/transport"
)

// SharesConn reports whether two Transports built by this package use the
// same grpc.ClientConn.
func SharesConn(a, b transport.Transport) bool {
	return a.(*grpcTransport).conn.cc == b.(*grpcTransport).conn.cc
}

// ConnState returns the connectivity state of tr's grpc.ClientConn.
func ConnState(tr transport.Transport) connectivity.State {
	return tr.(*grpcTransport).conn.cc.GetState()
}

// NumConns returns the number of conns b holds open.
func NumConns(b *Builder) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}
