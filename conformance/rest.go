// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proxyless/xds/resources"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// restPaths are the REST-JSON endpoints of the built-in types, after
// "/v3/discovery:" (xDS protocol, "REST-JSON polling subscriptions").
var restPaths = map[string]string{
	resources.ListenerTypeURL:    "listeners",
	resources.RouteConfigTypeURL: "routes",
	resources.ClusterTypeURL:     "clusters",
	resources.EndpointsTypeURL:   "endpoints",
}

// pollResult is the answer to one REST-JSON poll.
type pollResult struct {
	resp *response // the DiscoveryResponse of a 200
	code int       // the HTTP status; 0 when the poll was not answered within its wait (held)
}

// poll posts a DiscoveryRequest for names of typeURL carrying version to
// the server's REST-JSON endpoint and waits at most wait for the answer
// (a long-polling server holds a poll until something changes). A 200's
// response is shown to the checks of responses. The error is one of HTTP
// or of the body; a status other than 200 and 304 is an error.
func (k *kit) poll(ctx context.Context, typeURL, version string, wait time.Duration, names ...string) (pollResult, error) {
	body, err := protojson.Marshal(&v3discoverypb.DiscoveryRequest{
		Node: k.cfg.Node, TypeUrl: typeURL, VersionInfo: version, ResourceNames: names,
	})
	if err != nil {
		return pollResult{}, fmt.Errorf("encoding a poll: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	url := k.cfg.REST + "/v3/discovery:" + restPaths[typeURL]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return pollResult{}, fmt.Errorf("polling %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	hr, err := k.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return pollResult{}, nil // held
		}
		return pollResult{}, fmt.Errorf("polling %s: %w", url, err)
	}
	defer hr.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hr.Body, int64(k.cfg.MaxResponseBytes)+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return pollResult{}, nil
		}
		return pollResult{}, fmt.Errorf("reading the answer to a poll of %s: %w", url, err)
	}
	switch hr.StatusCode {
	case http.StatusNotModified:
		return pollResult{code: hr.StatusCode}, nil
	case http.StatusOK:
	default:
		return pollResult{code: hr.StatusCode}, fmt.Errorf("poll of %s answered %s: %.200s", url, hr.Status, b)
	}
	m := &v3discoverypb.DiscoveryResponse{}
	if len(b) > k.cfg.MaxResponseBytes {
		k.obs.mu.Lock()
		k.obs.responses[REST]++
		k.obs.addLocked(REST, checkResponseSize, "a %s poll answered with more than %d bytes", typeName(typeURL), k.cfg.MaxResponseBytes)
		k.obs.mu.Unlock()
		return pollResult{code: hr.StatusCode}, fmt.Errorf("poll of %s answered with more than %d bytes", url, k.cfg.MaxResponseBytes)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m); err != nil {
		k.obs.undecodable(REST, err)
		return pollResult{code: hr.StatusCode}, fmt.Errorf("poll of %s: the body is not a DiscoveryResponse: %w", url, err)
	}
	r := sotwResponse(m, len(b))
	k.obs.observe(REST, r, nil)
	if r.typeURL != typeURL {
		k.obs.mu.Lock()
		k.obs.addLocked(REST, checkResponseType, "a poll of %s answered with type %q", typeName(typeURL), r.typeURL)
		k.obs.mu.Unlock()
	}
	return pollResult{resp: r, code: hr.StatusCode}, nil
}
