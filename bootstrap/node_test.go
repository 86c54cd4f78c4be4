// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// TestNode_Proto checks the node proto of: fields from the file, and
// the client-controlled user agent and client features whatever the file
// says.
func TestNode_Proto(t *testing.T) {
	c := mustParse(t, readTestdata(t, "valid", "node"))
	md, err := structpb.NewStruct(map[string]any{
		"network": "default",
		"count":   3,
		"on":      true,
		"nested":  map[string]any{"list": []any{"a", 1.5, nil}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &v3corepb.Node{
		Id:                   "projects/42/nodes/n1",
		Cluster:              "frontend",
		Locality:             &v3corepb.Locality{Region: "eu-west1", Zone: "eu-west1-b", SubZone: "rack7"},
		Metadata:             md,
		UserAgentName:        "proxyless-xds-go",
		UserAgentVersionType: &v3corepb.Node_UserAgentVersion{UserAgentVersion: "v0.1.0-dev"},
		ClientFeatures:       []string{"envoy.lb.does_not_support_overprovisioning", "xds.config.resource-in-sotw", "xds.config.supports-resource-ttl"},
	}
	got := c.Node.Proto()
	if diff := cmp.Diff(got, want, protocmp.Transform()); diff != "" {
		t.Fatalf("Node.Proto() (-got, +want):\n%s", diff)
	}

	// A fresh proto each call: changing one does not change the next.
	got.ClientFeatures[0] = "changed"
	got.Metadata.Fields["network"] = structpb.NewStringValue("changed")
	got.Locality.Zone = "changed"
	if diff := cmp.Diff(c.Node.Proto(), want, protocmp.Transform()); diff != "" {
		t.Fatalf("second Node.Proto() after modifying the first (-got, +want):\n%s", diff)
	}
}

// TestNode_Proto_Empty checks that an empty node still carries the user
// agent and client features, with nil Locality and Metadata.
func TestNode_Proto_Empty(t *testing.T) {
	want := &v3corepb.Node{
		UserAgentName:        UserAgentName,
		UserAgentVersionType: &v3corepb.Node_UserAgentVersion{UserAgentVersion: Version},
		ClientFeatures:       ClientFeatures(),
	}
	if diff := cmp.Diff(Node{}.Proto(), want, protocmp.Transform()); diff != "" {
		t.Fatalf("Node{}.Proto() (-got, +want):\n%s", diff)
	}
}

// TestNode_Proto_UnconvertibleMetadata checks that a hand-built metadata
// value structpb cannot hold is left out instead of failing the node.
func TestNode_Proto_UnconvertibleMetadata(t *testing.T) {
	n := Node{ID: "n", Metadata: map[string]any{"ok": "yes", "bad": struct{}{}}}
	want := &structpb.Struct{Fields: map[string]*structpb.Value{"ok": structpb.NewStringValue("yes")}}
	if diff := cmp.Diff(n.Proto().GetMetadata(), want, protocmp.Transform()); diff != "" {
		t.Fatalf("Node.Proto().Metadata (-got, +want):\n%s", diff)
	}
}

// TestClientFeatures checks R-4.1's list and that callers get a copy.
func TestClientFeatures(t *testing.T) {
	want := []string{"envoy.lb.does_not_support_overprovisioning", "xds.config.resource-in-sotw", "xds.config.supports-resource-ttl"}
	got := ClientFeatures()
	if diff := cmp.Diff(got, want); diff != "" {
		t.Fatalf("ClientFeatures() (-got, +want):\n%s", diff)
	}
	got[0] = "changed"
	if diff := cmp.Diff(ClientFeatures(), want); diff != "" {
		t.Fatalf("ClientFeatures() after modifying a result (-got, +want):\n%s", diff)
	}
}
