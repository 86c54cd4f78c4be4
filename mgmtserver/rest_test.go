// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// poll posts req to path on hs and returns the status and, for 200, the
// decoded response.
func poll(t *testing.T, hs *httptest.Server, path string, req *v3discoverypb.DiscoveryRequest) (int, *v3discoverypb.DiscoveryResponse) {
	t.Helper()
	body, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	hreq, err := http.NewRequestWithContext(testContext(t), http.MethodPost, hs.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hresp, err := hs.Client().Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(hresp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if hresp.StatusCode != http.StatusOK {
		return hresp.StatusCode, nil
	}
	if ct := hresp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	resp := &v3discoverypb.DiscoveryResponse{}
	if err := protojson.Unmarshal(b, resp); err != nil {
		t.Fatalf("decoding the response %s: %v", b, err)
	}
	return hresp.StatusCode, resp
}

// clusterNames returns the names of the Clusters of resp.
func clusterNames(t *testing.T, resp *v3discoverypb.DiscoveryResponse) []string {
	t.Helper()
	var names []string
	for _, a := range resp.GetResources() {
		c := &v3clusterpb.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			t.Fatal(err)
		}
		names = append(names, c.GetName())
	}
	return names
}

func TestRESTHandler(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	hs := httptest.NewServer(ms.RESTHandler())
	defer hs.Close()
	node := &v3corepb.Node{Id: "n1"}

	if code, _ := poll(t, hs, "/v3/discovery:clusters", &v3discoverypb.DiscoveryRequest{Node: node}); code != http.StatusNotModified {
		t.Errorf("without a snapshot: HTTP %d, want 304", code)
	}
	ms.Update("", testutil.Resources{Version: "v1", Clusters: []*v3clusterpb.Cluster{
		testutil.Cluster("a", ""), testutil.Cluster("b", ""), testutil.Cluster("c", ""),
	}})
	for _, tc := range []struct {
		desc    string
		names   []string
		version string
		want    []string // nil: 304
	}{
		{"legacy wildcard", nil, "", []string{"a", "b", "c"}},
		{"explicit wildcard", []string{"*"}, "", []string{"a", "b", "c"}},
		{"names in snapshot order", []string{"c", "a", "missing"}, "", []string{"a", "c"}},
		{"an old version", []string{"b"}, "v0", []string{"b"}},
		{"the current version", []string{"b"}, "v1", nil},
	} {
		code, resp := poll(t, hs, "/v3/discovery:clusters", &v3discoverypb.DiscoveryRequest{Node: node, ResourceNames: tc.names, VersionInfo: tc.version})
		switch {
		case tc.want == nil && code != http.StatusNotModified:
			t.Errorf("%s: HTTP %d, want 304", tc.desc, code)
		case tc.want == nil:
		case code != http.StatusOK:
			t.Errorf("%s: HTTP %d, want 200", tc.desc, code)
		default:
			if got := clusterNames(t, resp); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("%s: clusters %v, want %v", tc.desc, got, tc.want)
			}
			if resp.GetVersionInfo() != "v1" || resp.GetTypeUrl() != cdsURL {
				t.Errorf("%s: version_info %q, type_url %q; want v1, %s", tc.desc, resp.GetVersionInfo(), resp.GetTypeUrl(), cdsURL)
			}
		}
	}

	// Every poll is recorded with StreamID 0, the type from the path and
	// the node.
	reqs := ms.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests recorded, want 6", len(reqs))
	}
	for _, r := range reqs {
		if r.StreamID != 0 || r.Req.GetTypeUrl() != cdsURL || r.Node.GetId() != "n1" {
			t.Errorf("recorded StreamID %d, type_url %q, node %q; want 0, %s, n1", r.StreamID, r.Req.GetTypeUrl(), r.Node.GetId(), cdsURL)
		}
	}
	if ms.OpenStreams() != 0 {
		t.Errorf("OpenStreams() = %d after polls, want 0", ms.OpenStreams())
	}

	// Bad requests are refused and not recorded.
	for _, tc := range []struct {
		desc, method, path, body string
		want                     int
	}{
		{"unknown path", http.MethodPost, "/v3/discovery:secrets", "{}", http.StatusNotFound},
		{"GET", http.MethodGet, "/v3/discovery:clusters", "", http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, "/v3/discovery:clusters", "{", http.StatusBadRequest},
		{"another type", http.MethodPost, "/v3/discovery:clusters", `{"type_url": "` + ldsURL + `"}`, http.StatusBadRequest},
	} {
		hreq, err := http.NewRequestWithContext(testContext(t), tc.method, hs.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		hresp, err := hs.Client().Do(hreq)
		if err != nil {
			t.Fatal(err)
		}
		hresp.Body.Close()
		if hresp.StatusCode != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.desc, hresp.StatusCode, tc.want)
		}
	}

	// RejectStreams refuses polls, as Stop does.
	ms.RejectStreams(errors.New("down for maintenance"))
	if code, _ := poll(t, hs, "/v3/discovery:clusters", &v3discoverypb.DiscoveryRequest{Node: node}); code != http.StatusServiceUnavailable {
		t.Errorf("after RejectStreams: HTTP %d, want 503", code)
	}
	ms.RejectStreams(nil)
	ms.Stop()
	if code, _ := poll(t, hs, "/v3/discovery:clusters", &v3discoverypb.DiscoveryRequest{Node: node}); code != http.StatusServiceUnavailable {
		t.Errorf("after Stop: HTTP %d, want 503", code)
	}
	if n := len(ms.Requests()); n != 6 {
		t.Errorf("%d requests recorded after refused ones, want 6", n)
	}
}

func TestRESTHandler_Manual(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	hs := httptest.NewServer(ms.RESTHandler())
	defer hs.Close()
	ms.Update("", testutil.Resources{Version: "v1", Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "")}})
	if code, _ := poll(t, hs, "/v3/discovery:clusters", &v3discoverypb.DiscoveryRequest{ResourceNames: []string{"a"}}); code != http.StatusNotModified {
		t.Errorf("Manual server: HTTP %d, want 304", code)
	}
	if n := len(ms.Requests()); n != 1 {
		t.Errorf("%d requests recorded, want 1", n)
	}
}
