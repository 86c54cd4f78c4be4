// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// restPaths maps the REST-JSON endpoint of each built-in type, the part of
// the path after "/v3/discovery:", to its type URL (xDS protocol,
// "REST-JSON polling subscriptions").
var restPaths = map[string]string{
	"listeners": listenerTypeURL,
	"routes":    routeConfigTypeURL,
	"clusters":  clusterTypeURL,
	"endpoints": endpointsTypeURL,
}

// maxRESTRequestBytes bounds the body of a REST-JSON request the handler
// reads: 4 MiB, gRPC's default receive limit.
const maxRESTRequestBytes = 4 << 20

// RESTHandler returns an http.Handler that serves the server's snapshots
// over REST-JSON polling (xDS protocol, "REST-JSON polling
// subscriptions"), as go-control-plane's HTTP gateway does: POST
// /v3/discovery:listeners, :routes, :clusters or :endpoints, the body a
// DiscoveryRequest in proto3 JSON, the answer a DiscoveryResponse in
// proto3 JSON (Content-Type application/json). Serve it with
// net/http/httptest or any http.Server; the caller closes that server
// before Stop.
//
// Each poll is answered from the snapshot of the request's node (see
// Update): 304 Not Modified with an empty body when the request's
// version_info is the snapshot's version, or when there is no snapshot
// yet; otherwise 200 with the snapshot's resources of the type that the
// request asks for, in snapshot order: all of them when resource_names is
// empty or contains "*" (a poll has no stream, so every empty list is a
// wildcard), else the named ones the snapshot has. The response's
// version_info is the snapshot's; it has no nonce. WrapResources applies
// as for ADS. A poll is stateless: it changes no stream's subscription.
//
// Every poll is recorded, before it is answered, as a Request whose Req is
// the decoded DiscoveryRequest (type_url set from the path when the body
// has none) and whose StreamID is 0: a poll belongs to no stream, and
// OpenStreams, BreakStreams and SendResponse do not see it. With
// Options.Manual every poll is answered 304. RejectStreams makes
// polls fail with 503 Service Unavailable and the error's text, unrecorded,
// as Stop does. A request that is not a POST to one of the four paths, or
// whose body is not a DiscoveryRequest of the path's type, gets 404, 405
// or 400 and is not recorded.
//
// The handler is safe for concurrent use.
func (ms *Server) RESTHandler() http.Handler {
	return http.HandlerFunc(ms.serveREST)
}

func (ms *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	suffix, ok := strings.CutPrefix(r.URL.Path, "/v3/discovery:")
	typeURL := restPaths[suffix]
	if !ok || typeURL == "" {
		http.Error(w, fmt.Sprintf("mgmtserver: no REST-JSON endpoint %q (want /v3/discovery:listeners, routes, clusters or endpoints)", r.URL.Path), http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "mgmtserver: REST-JSON discovery takes POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRESTRequestBytes))
	if err != nil {
		http.Error(w, fmt.Sprintf("mgmtserver: reading the request: %v", err), http.StatusBadRequest)
		return
	}
	req := &v3discoverypb.DiscoveryRequest{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, req); err != nil {
		http.Error(w, fmt.Sprintf("mgmtserver: decoding the DiscoveryRequest: %v", err), http.StatusBadRequest)
		return
	}
	if req.GetTypeUrl() == "" {
		req.TypeUrl = typeURL
	}
	if req.GetTypeUrl() != typeURL {
		http.Error(w, fmt.Sprintf("mgmtserver: type_url %q posted to %s, which serves %q", req.GetTypeUrl(), r.URL.Path, typeURL), http.StatusBadRequest)
		return
	}
	if err := ms.restRefusal(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	ms.recordRequest(&Request{Node: req.GetNode(), Req: req})
	snap := ms.snapshotFor(req.GetNode().GetId())
	if ms.opts.Manual || snap == nil || req.GetVersionInfo() == snap.version {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	resp := &v3discoverypb.DiscoveryResponse{VersionInfo: snap.version, TypeUrl: typeURL, Resources: []*anypb.Any{}}
	wildcard := len(req.GetResourceNames()) == 0
	names := make(map[string]bool, len(req.GetResourceNames()))
	for _, n := range req.GetResourceNames() {
		wildcard = wildcard || n == "*"
		names[n] = true
	}
	for _, res := range snap.resources[typeURL] {
		if wildcard || names[res.name] {
			resp.Resources = append(resp.Resources, res.any)
		}
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		http.Error(w, fmt.Sprintf("mgmtserver: encoding the DiscoveryResponse: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// restRefusal returns the error a poll is refused with: the server was
// stopped, or RejectStreams is in effect; nil otherwise.
func (ms *Server) restRefusal() error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	switch {
	case ms.isStopped:
		return errServerStopped
	case ms.rejectErr != nil:
		return ms.rejectErr
	}
	return nil
}
