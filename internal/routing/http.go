// SPDX-License-Identifier: Apache-2.0

package routing

import (
	"net/http"
	"strings"
)

// HTTPHeaders is the HeaderSource of an HTTP request (not a gRPC RPC),
// with Envoy's view of its headers: names without case, the values of a
// repeated header joined with ","; the pseudo-headers ":authority" (also
// under "host", which HTTP/1.1 sends and Envoy turns into ":authority"),
// ":method", ":path" (with the query) and ":scheme"; every other header as
// the request carries it ("content-type" and "-bin" headers included).
// The net/http server of package xdshttp fills it from an incoming
// request; it is the request's, used by one goroutine.
type HTTPHeaders struct {
	// Authority is ":authority": the request's Host.
	Authority string
	// Method is ":method".
	Method string
	// Path is ":path": the request target, query included.
	Path string
	// Scheme is ":scheme": "http" or "https".
	Scheme string
	// Fields are the other headers.
	Fields http.Header
}

var _ HeaderSource = (*HTTPHeaders)(nil)

// Header returns the values of header name (lowercase) joined with ",",
// and whether the request has it.
func (h *HTTPHeaders) Header(name string) (string, bool) {
	var v string
	switch name {
	case ":authority", "host":
		v = h.Authority
	case ":method":
		v = h.Method
	case ":path":
		v = h.Path
	case ":scheme":
		v = h.Scheme
	default:
		vs := h.Fields.Values(name)
		switch len(vs) {
		case 0:
			return "", false
		case 1:
			return vs[0], true
		}
		return strings.Join(vs, ","), true
	}
	return v, v != ""
}
