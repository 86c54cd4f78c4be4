// SPDX-License-Identifier: Apache-2.0

package resources

import (
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// commonTLS applies the rules a Cluster's UpstreamTlsContext and
// a filter chain's DownstreamTlsContext share to their
// CommonTlsContext, whose path is field: it must be present, without
// tls_params or custom_handshaker; its certificate provider instances are
// read from the gRFC A29 fields, or, as grpc-go does, from the deprecated
// fields when those give nothing. a29Err is then the error of the A29
// fields (with its path), which the caller reports when what it needs
// is still missing; an error of the A29 fields is otherwise reported only
// if the deprecated fields fail too.
func commonTLS(field string, common *v3tlspb.CommonTlsContext) (sc *SecurityConfig, a29Err, err error) {
	if common == nil {
		return nil, nil, invalid(field, "missing")
	}
	if common.GetTlsParams() != nil {
		return nil, nil, invalid(field+".tls_params", "not supported")
	}
	if common.GetCustomHandshaker() != nil {
		return nil, nil, invalid(field+".custom_handshaker", "not supported")
	}
	sc, a29Err = securityFromCommon(common)
	if sc != nil && !sc.isEmpty() {
		return sc, nil, nil
	}
	old, oldErr := securityFromDeprecated(common)
	if oldErr != nil {
		if a29Err != nil {
			return nil, nil, withFieldPrefix(field, a29Err)
		}
		return nil, nil, withFieldPrefix(field, oldErr)
	}
	return old, withFieldPrefix(field, a29Err), nil
}
