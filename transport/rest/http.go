// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// fetch posts body for p and returns the response, nil for 304 Not
// Modified, or an error.
func (s *stream) fetch(ctx context.Context, p *poller, body []byte) (*v3discoverypb.DiscoveryResponse, error) {
	url := s.t.base + "/v3/discovery:" + p.path
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rest: POST %s: %w", url, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := s.t.hc.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("rest: POST %s: %w", url, err)
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hresp.Body, s.t.opts.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("rest: POST %s: reading the body: %w", url, err)
	}
	switch hresp.StatusCode {
	case http.StatusOK:
	case http.StatusNotModified:
		return nil, nil
	default:
		const maxShown = 512
		if len(b) > maxShown {
			b = b[:maxShown]
		}
		return nil, fmt.Errorf("rest: POST %s: HTTP %s: %q", url, hresp.Status, b)
	}
	if int64(len(b)) > s.t.opts.maxBytes {
		return nil, fmt.Errorf("rest: POST %s: %w: body over %d bytes", url, transport.ErrMessageTooLarge, s.t.opts.maxBytes)
	}
	resp := &v3discoverypb.DiscoveryResponse{}
	if err := (protojson.UnmarshalOptions{Resolver: s.t.opts.resolver, DiscardUnknown: true}).Unmarshal(b, resp); err != nil {
		return nil, fmt.Errorf("rest: POST %s: decoding DiscoveryResponse: %w", url, err)
	}
	if resp.GetTypeUrl() == "" {
		resp.TypeUrl = p.typeURL
	}
	if resp.GetTypeUrl() != p.typeURL {
		return nil, fmt.Errorf("rest: POST %s: %w: response of type %q", url, errWrongType, resp.GetTypeUrl())
	}
	return resp, nil
}

var errWrongType = errors.New("response of another type than requested")
