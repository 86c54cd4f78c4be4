// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// resourceErr builds one resource_errors entry.
func resourceErr(name string, code codes.Code, msg string) *v3discoverypb.ResourceError {
	return &v3discoverypb.ResourceError{
		ResourceName: &v3discoverypb.ResourceName{Name: name},
		ErrorDetail:  &statuspb.Status{Code: int32(code), Message: msg},
	}
}

// wantServerError fails the test unless err wraps ErrServerReported and
// carries the server's code.
func wantServerError(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if !errors.Is(err, client.ErrServerReported) {
		t.Fatalf("error = %v, want one wrapping ErrServerReported", err)
	}
	if got := status.Code(err); got != code {
		t.Fatalf("status.Code(%v) = %v, want %v", err, got, code)
	}
}

// TestResourceErrors_SotW checks R-19 over SotW: a server-reported
// NOT_FOUND for an uncached resource is a does-not-exist; an error for a
// cached one is ambient and keeps the value (no fail_on_data_errors); a
// reported name is not "left out" of a CDS response; errors for
// names nobody watches are ignored; the response is ACKed; a new watcher
// gets the value then the error; a valid version afterwards is delivered
// again, and clears the error.
func TestResourceErrors_SotW(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")

	resp := discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", ""))
	resp.ResourceErrors = []*v3discoverypb.ResourceError{
		resourceErr("b", codes.NotFound, "no such cluster"),
		resourceErr("unwatched", codes.PermissionDenied, "not yours"),
	}
	nonce, err := ms.SendResponse(ctx, resp)
	if err != nil {
		t.Fatal(err)
	}
	if a := waitForNonce(t, ms, nonce).Req; a.GetErrorDetail() != nil || a.GetVersionInfo() != "1" {
		t.Fatalf("answer = %v, want an ACK of version 1", a)
	}
	wa.wantKind(ctx, t, changed, nil)
	e := wb.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	wantServerError(t, e.err, codes.NotFound)
	if !strings.Contains(e.err.Error(), "no such cluster") {
		t.Fatalf("error %q does not carry the server's message", e.err)
	}
	if g := dumpEntry(c, resources.ClusterTypeURL, "b"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST {
		t.Fatalf("b's status = %v, want DOES_NOT_EXIST", g.GetClientStatus())
	}
	if g := dumpEntry(c, resources.ClusterTypeURL, "unwatched"); g != nil {
		t.Fatalf("an error for an unwatched name made an entry: %v", g)
	}

	// An error for the cached "a", alone in a CDS response: ambient, the
	// value stays, and "a" is not deleted by omission.
	resp = &v3discoverypb.DiscoveryResponse{TypeUrl: resources.ClusterTypeURL, VersionInfo: "2",
		ResourceErrors: []*v3discoverypb.ResourceError{resourceErr("a", codes.Unavailable, "backend down")}}
	if nonce, err = ms.SendResponse(ctx, resp); err != nil {
		t.Fatal(err)
	}
	if a := waitForNonce(t, ms, nonce).Req; a.GetErrorDetail() != nil {
		t.Fatalf("answer = %v, want an ACK", a)
	}
	wantServerError(t, wa.wantKind(ctx, t, ambientError, nil).err, codes.Unavailable)
	wa.wantNone(t, defaultTestShortTimeout)
	g := dumpEntry(c, resources.ClusterTypeURL, "a")
	if g.GetClientStatus() != v3adminpb.ClientResourceStatus_RECEIVED_ERROR || g.GetXdsConfig() == nil ||
		!strings.Contains(g.GetErrorState().GetDetails(), "backend down") {
		t.Fatalf("a's dump = %v, want RECEIVED_ERROR with the value and the server's error", g)
	}
	w2 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w2)()
	w2.wantKind(ctx, t, changed, nil)
	wantServerError(t, w2.wantKind(ctx, t, ambientError, nil).err, codes.Unavailable)

	// The same value again clears the error and is delivered.
	if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "3", testutil.Cluster("a", ""))); err != nil {
		t.Fatal(err)
	}
	wa.wantKind(ctx, t, changed, nil)
	if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED || g.GetErrorState() != nil {
		t.Fatalf("a's dump = %v, want ACKED without error_state", g)
	}
}

// TestResourceErrors_InvalidEntriesNACKed checks: an entry without a
// name or with status OK makes the response a NACK; the usable entries and
// resources of the response are applied all the same.
func TestResourceErrors_InvalidEntriesNACKed(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	wa := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")

	resp := &v3discoverypb.DiscoveryResponse{TypeUrl: resources.ClusterTypeURL, VersionInfo: "1",
		ResourceErrors: []*v3discoverypb.ResourceError{
			resourceErr("", codes.NotFound, "nameless"),
			resourceErr("ok", codes.OK, ""),
			resourceErr("a", codes.Internal, "boom"),
		}}
	nonce, err := ms.SendResponse(ctx, resp)
	if err != nil {
		t.Fatal(err)
	}
	nack := waitForNonce(t, ms, nonce).Req
	msg := nack.GetErrorDetail().GetMessage()
	if nack.GetVersionInfo() != "" || !strings.Contains(msg, "resource_errors[0]") || !strings.Contains(msg, "resource_errors[1]") ||
		strings.Contains(msg, "resource_errors[2]") {
		t.Fatalf("answer = %v, want a NACK of version \"\" naming resource_errors[0] and [1] only", nack)
	}
	wantServerError(t, wa.wantKind(ctx, t, resourceError, nil).err, codes.Internal)
}

// TestResourceErrors_FailOnDataErrors checks: with
// fail_on_data_errors, a NACKed update of a cached resource drops the
// value (ResourceError, not AmbientError), and so do server-reported
// PERMISSION_DENIED and NOT_FOUND; other codes keep it. With
// ignore_resource_deletion too, NOT_FOUND keeps the value.
func TestResourceErrors_FailOnDataErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		features      []string
		nackDrops     bool
		notFoundDrops bool
	}{
		{name: "absent"},
		{name: "fail_on_data_errors", features: []string{bootstrap.FeatureFailOnDataErrors}, nackDrops: true, notFoundDrops: true},
		{name: "with ignore_resource_deletion", features: []string{bootstrap.FeatureFailOnDataErrors, bootstrap.FeatureIgnoreResourceDeletion}, nackDrops: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
			c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: tc.features})
			w := map[string]*recorder[*resources.Cluster]{}
			for _, n := range []string{"a", "b", "c", "d"} {
				w[n] = newRecorder[*resources.Cluster]()
				defer client.Watch(c, resources.ClusterType, n, w[n])()
			}
			waitForNames(t, ms, resources.ClusterTypeURL, "a", "b", "c", "d")
			all := []*v3clusterpb.Cluster{testutil.Cluster("a", ""), testutil.Cluster("b", ""), testutil.Cluster("c", ""), testutil.Cluster("d", "")}
			if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", all[0], all[1], all[2], all[3])); err != nil {
				t.Fatal(err)
			}
			for _, r := range w {
				r.wantKind(ctx, t, changed, nil)
			}
			resp := discoveryResponse(resources.ClusterTypeURL, "2", invalidCluster("a"))
			resp.ResourceErrors = []*v3discoverypb.ResourceError{
				resourceErr("b", codes.PermissionDenied, "denied"),
				resourceErr("c", codes.NotFound, "gone"),
				resourceErr("d", codes.Unavailable, "later"),
			}
			if _, err := ms.SendResponse(ctx, resp); err != nil {
				t.Fatal(err)
			}
			check := func(name string, drops bool, target error) {
				t.Helper()
				kind := ambientError
				if drops {
					kind = resourceError
				}
				w[name].wantKind(ctx, t, kind, target)
				if g := dumpEntry(c, resources.ClusterTypeURL, name); (g.GetXdsConfig() == nil) != drops {
					t.Fatalf("%s's dump = %v, value dropped = %v, want %v", name, g, g.GetXdsConfig() == nil, drops)
				}
			}
			check("a", tc.nackDrops, client.ErrResourceInvalid)
			check("b", tc.nackDrops, client.ErrServerReported)
			check("c", tc.notFoundDrops, client.ErrResourceNotFound)
			check("d", false, client.ErrServerReported)
		})
	}
}

// TestResourceErrors_Delta checks R-19 over delta (field 9): NOT_FOUND for
// an uncached resource is a does-not-exist, another code for a cached one
// is ambient, and the response is ACKed.
func TestResourceErrors_Delta(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	wantDeltaRequest(t, ms, true, sub(resources.ClusterTypeURL, "a"))
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	wantDeltaRequest(t, ms, false, sub(resources.ClusterTypeURL, "b"))

	resp := deltaResponse(resources.ClusterTypeURL, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")})
	resp.ResourceErrors = []*v3discoverypb.ResourceError{resourceErr("b", codes.NotFound, "no such cluster")}
	nonce := sendDelta(t, ms, resp)
	wantDeltaRequest(t, ms, false, ack(resources.ClusterTypeURL, nonce))
	wa.wantKind(ctx, t, changed, nil)
	wantServerError(t, wb.wantKind(ctx, t, resourceError, client.ErrResourceNotFound).err, codes.NotFound)

	resp = deltaResponse(resources.ClusterTypeURL, nil)
	resp.ResourceErrors = []*v3discoverypb.ResourceError{resourceErr("a", codes.PermissionDenied, "denied")}
	nonce = sendDelta(t, ms, resp)
	wantDeltaRequest(t, ms, false, ack(resources.ClusterTypeURL, nonce))
	wantServerError(t, wa.wantKind(ctx, t, ambientError, nil).err, codes.PermissionDenied)
	if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_RECEIVED_ERROR || g.GetVersionInfo() != "1" {
		t.Fatalf("a's dump = %v, want RECEIVED_ERROR at version 1", g)
	}
}

// TestResourceErrors_StopTimer checks with R-19: a server-reported
// error for a requested resource stops its does-not-exist timer, so no
// does-not-exist follows 15 s later. Fake time.
func TestResourceErrors_StopTimer(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		waitForNames(t, ms, resources.ClusterTypeURL, "a")
		resp := &v3discoverypb.DiscoveryResponse{TypeUrl: resources.ClusterTypeURL, VersionInfo: "1",
			ResourceErrors: []*v3discoverypb.ResourceError{resourceErr("a", codes.Unavailable, "later")}}
		if _, err := ms.SendResponse(ctx, resp); err != nil {
			t.Fatal(err)
		}
		wantServerError(t, w.wantKind(ctx, t, resourceError, nil).err, codes.Unavailable)
		time.Sleep(time.Minute)
		w.wantNone(t, time.Second)
	})
}
