// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// ErrCrossOriginRedirect is wrapped by the error of a poll that the server
// redirected to another origin (another scheme, host or port than the
// server URI's). Such a redirect is never followed: the node and the
// subscription would go to that server, whose resources the client would
// take for the management server's. Redirects within the origin are
// followed.
var ErrCrossOriginRedirect = errors.New("redirect to another origin refused")

// pollClient returns the HTTP client of the polls: c (nil: a new client
// with http.DefaultTransport's settings, reported as own) with a redirect
// policy that refuses a redirect to another origin (sameOrigin) before c's
// own CheckRedirect sees it. c is not modified: the result is a copy of it,
// sharing its Transport (its connections).
func pollClient(c *http.Client) (hc *http.Client, own bool) {
	if c == nil {
		c, own = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, true
	}
	cp := *c
	cp.CheckRedirect = sameOrigin(c.CheckRedirect)
	return &cp, own
}

// sameOrigin returns a redirect policy (http.Client.CheckRedirect) that
// refuses a redirect to another origin than the first request's, and
// otherwise applies next, or net/http's default (at most 10 redirects)
// when next is nil.
func sameOrigin(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if from := via[0].URL; origin(req.URL) != origin(from) {
			return fmt.Errorf("%w: %s://%s redirected to %s://%s (scheme, host and port must stay those of the server URI)",
				ErrCrossOriginRedirect, from.Scheme, from.Host, req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// origin returns the origin of u (RFC 6454): scheme, host and port, with
// the scheme's default port when u has none, in lower case.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// fetch posts body for p and returns the response, nil for 304 Not
// Modified, or an error. The poll, its body included, must be over within
// the poll timeout (WithPollTimeout): its expiry is an error wrapping
// context.DeadlineExceeded, which ends the stream.
func (s *stream) fetch(ctx context.Context, p *poller, body []byte) (*v3discoverypb.DiscoveryResponse, error) {
	url := s.t.base + "/v3/discovery:" + p.path
	pctx := ctx
	ctx, cancel := context.WithTimeout(pctx, s.t.opts.pollTimeout)
	defer cancel()
	// failed wraps an error of the request or of its body, saying when
	// the poll timed out.
	failed := func(err error) error {
		if pctx.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("rest: POST %s: no complete answer within %s (rest.WithPollTimeout): %w", url, s.t.opts.pollTimeout, err)
		}
		return fmt.Errorf("rest: POST %s: %w", url, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rest: POST %s: %w", url, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := s.t.hc.Do(hreq)
	if err != nil {
		return nil, failed(err)
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hresp.Body, s.t.limit.Bytes+1))
	if err != nil {
		return nil, failed(fmt.Errorf("reading the body: %w", err))
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
	if int64(len(b)) > s.t.limit.Bytes {
		return nil, fmt.Errorf("rest: POST %s: %w: body over %d bytes (%s)", url, transport.ErrMessageTooLarge, s.t.limit.Bytes, s.t.limit.Hint)
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
