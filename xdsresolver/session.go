// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/routing"
)

// Stateful session affinity (gRFC A55, A60), with DialOptions: the
// interceptors read the session cookie of each RPC whose route has a
// session and whose path the cookie's path matches (dataplane.NewSession),
// and hand the session to the router's picker with the route (it picks
// the cookie's endpoint when it can, and notes what it picked); when the
// RPC's response headers (or its trailers, for a response without
// headers) come, they add the set-cookie naming the endpoint and cluster
// that served it, unless the cookie already did; the application keeps
// it and sends it with the next RPCs of the session.

// cookies returns the values of the RPC's cookie headers.
func cookies(h *routing.Headers) []string {
	switch {
	case h.MD != nil:
		return h.MD.Get("cookie")
	case h.Ctx != nil:
		return metadata.ValueFromOutgoingContext(h.Ctx, "cookie")
	}
	return nil
}

// sessionUnary runs a unary RPC of session s: it captures the response headers
// and trailers, and adds the set-cookie to those the application asked
// for (grpc.Header, or grpc.Trailer when the response had no headers).
func sessionUnary(s *dataplane.Session, invoke func(opts []grpc.CallOption) error, opts []grpc.CallOption) error {
	var hdr metadata.MD
	err := invoke(append(opts[:len(opts):len(opts)], grpc.Header(&hdr)))
	v, ok := s.SetCookie()
	if !ok {
		return err
	}
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			if hdr != nil && o.HeaderAddr != nil {
				*o.HeaderAddr = withCookie(*o.HeaderAddr, v)
			}
		case grpc.TrailerCallOption:
			if hdr == nil && o.TrailerAddr != nil {
				*o.TrailerAddr = withCookie(*o.TrailerAddr, v)
			}
		}
	}
	return err
}

// withCookie returns a copy of md with the set-cookie v.
func withCookie(md metadata.MD, v string) metadata.MD {
	md = md.Copy()
	if md == nil {
		md = metadata.MD{}
	}
	md.Append("set-cookie", v)
	return md
}

// sessionStream is a stream of a session: its headers (or, when the
// response has none, its trailers) carry the set-cookie.
type sessionStream struct {
	grpc.ClientStream
	s *dataplane.Session
}

func (st *sessionStream) Header() (metadata.MD, error) {
	md, err := st.ClientStream.Header()
	if err != nil || md == nil {
		return md, err
	}
	if v, ok := st.s.SetCookie(); ok {
		md = withCookie(md, v)
	}
	return md, nil
}

func (st *sessionStream) Trailer() metadata.MD {
	md := st.ClientStream.Trailer()
	if hdr, err := st.ClientStream.Header(); err == nil && hdr != nil {
		return md // the headers had the cookie
	}
	if v, ok := st.s.SetCookie(); ok {
		md = withCookie(md, v)
	}
	return md
}
