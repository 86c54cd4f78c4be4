// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// TestType_Name checks the name fast path against what Decode reports: the
// engine relies on it to skip unchanged resources.
func TestType_Name(t *testing.T) {
	valid := mustAny(t, edsCluster("c", "s"))
	// Two name fields: proto.Unmarshal keeps the last one.
	twoNames := &anypb.Any{TypeUrl: ClusterTypeURL, Value: append(
		protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "first"),
		mustAny(t, edsCluster("second", "s")).GetValue()...)}
	// Field 1 with the varint wire type is an unknown field for
	// proto.Unmarshal, not a name.
	varintName := &anypb.Any{TypeUrl: ClusterTypeURL, Value: protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7)}

	cases := []struct {
		name   string
		give   *anypb.Any
		want   string
		wantOK bool
	}{
		{name: "valid", give: valid, want: "c", wantOK: true},
		{name: "canonicalised", give: mustAny(t, edsCluster("xdstp://a/t/c?b=1&a=2", "s")), want: "xdstp://a/t/c?a=2&b=1", wantOK: true},
		{name: "last name wins", give: twoNames, want: "second", wantOK: true},
		{name: "absent name", give: mustAny(t, edsCluster("", "s"))},
		{name: "name with the wrong wire type", give: varintName},
		{name: "malformed bytes", give: &anypb.Any{TypeUrl: ClusterTypeURL, Value: []byte{0x0a, 0x09, 'x'}}},
		{name: "invalid UTF-8", give: &anypb.Any{TypeUrl: ClusterTypeURL, Value: []byte{0x0a, 0x02, 0xff, 0xfe}}},
		{name: "wrong type URL", give: &anypb.Any{TypeUrl: ListenerTypeURL, Value: valid.GetValue()}},
		{name: "nil", give: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ClusterType.Name(tc.give)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("Name() = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
			// When the fast path answers, Decode must agree; when it does
			// not, Decode must not find a name either (or fail).
			name, _, err := ClusterType.Decode(tc.give)
			if ok && name != got {
				t.Errorf("Decode() name = %q, want %q as Name() said", name, got)
			}
			if !ok && name != "" && err == nil {
				t.Errorf("Decode() = %q, nil; Name() found no name", name)
			}
		})
	}
}

// TestType_Config checks the descriptors of the built-in types and the
// defaults of NewType.
func TestType_Config(t *testing.T) {
	custom := NewType(TypeConfig[string]{
		TypeURL: "type.googleapis.com/example.v1.Widget",
		Decode:  func(*anypb.Any) (string, string, error) { return "", "", nil },
	})
	cases := []struct {
		name            string
		give            ResourceType
		wantURL         string
		wantTypeName    string
		wantAllRequired bool
	}{
		// LDS and CDS are the types whose SotW responses are complete.
		{name: "listener", give: ListenerType, wantURL: "type.googleapis.com/envoy.config.listener.v3.Listener", wantTypeName: "Listener", wantAllRequired: true},
		{name: "route config", give: RouteConfigType, wantURL: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", wantTypeName: "RouteConfiguration"},
		{name: "cluster", give: ClusterType, wantURL: "type.googleapis.com/envoy.config.cluster.v3.Cluster", wantTypeName: "Cluster", wantAllRequired: true},
		{name: "endpoints", give: EndpointsType, wantURL: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", wantTypeName: "ClusterLoadAssignment"},
		{name: "custom default type name", give: custom, wantURL: "type.googleapis.com/example.v1.Widget", wantTypeName: "Widget"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.give.TypeURL(); got != tc.wantURL {
				t.Errorf("TypeURL() = %q, want %q", got, tc.wantURL)
			}
			if got := tc.give.TypeName(); got != tc.wantTypeName {
				t.Errorf("TypeName() = %q, want %q", got, tc.wantTypeName)
			}
			if got := tc.give.AllResourcesRequiredInSotW(); got != tc.wantAllRequired {
				t.Errorf("AllResourcesRequiredInSotW() = %v, want %v", got, tc.wantAllRequired)
			}
		})
	}
	for _, c := range []struct{ url, want string }{
		{ListenerTypeURL, ListenerType.TypeURL()},
		{RouteConfigTypeURL, RouteConfigType.TypeURL()},
		{ClusterTypeURL, ClusterType.TypeURL()},
		{EndpointsTypeURL, EndpointsType.TypeURL()},
	} {
		if c.url != c.want {
			t.Errorf("type URL constant %q differs from the type's %q", c.url, c.want)
		}
	}
}

// TestNewType_Panics checks the programming errors NewType rejects.
func TestNewType_Panics(t *testing.T) {
	decode := func(*anypb.Any) (string, int, error) { return "", 0, nil }
	cases := []struct {
		name string
		give TypeConfig[int]
	}{
		{name: "no type URL", give: TypeConfig[int]{Decode: decode}},
		{name: "no decoder", give: TypeConfig[int]{TypeURL: "type.googleapis.com/x.Y"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("NewType() did not panic")
				}
			}()
			NewType(tc.give)
		})
	}
}

// TestDecodeTyped_PanicRecovery checks that a panicking decoder yields a
// per-resource error naming the resource when its name is known before
// decoding, and a top-level error otherwise.
func TestDecodeTyped_PanicRecovery(t *testing.T) {
	const typeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	panicky := func(*anypb.Any) (string, *int, error) { panic("boom") }
	withName := NewType(TypeConfig[*int]{TypeURL: typeURL, TypeName: "Panicky", Decode: panicky, NameField: 1})
	withoutName := NewType(TypeConfig[*int]{TypeURL: typeURL, TypeName: "Panicky", Decode: panicky})
	in := mustAny(t, &v3clusterpb.Cluster{Name: "xdstp://a/t/c?b=1&a=2"})

	cases := []struct {
		name     string
		give     Type[*int]
		wantName string
		wantErr  string
	}{
		{name: "name known before decoding", give: withName, wantName: "xdstp://a/t/c?a=2&b=1", wantErr: `Panicky "xdstp://a/t/c?a=2&b=1": decoder panic: boom`},
		{name: "name unknown", give: withoutName, wantName: "", wantErr: `Panicky "": decoder panic: boom`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := tc.give.DecodeTyped(in)
			if name != tc.wantName || v != nil || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DecodeTyped() = %q, %v, %v; want %q, nil, error containing %q", name, v, err, tc.wantName, tc.wantErr)
			}
			// The untyped entry point recovers too.
			if name, _, err := tc.give.Decode(in); name != tc.wantName || err == nil {
				t.Fatalf("Decode() = %q, %v; want %q and an error", name, err, tc.wantName)
			}
		})
	}
}

// TestDecodeTyped_CustomType checks that a custom type's decoder result is
// passed through with its name canonicalised.
func TestDecodeTyped_CustomType(t *testing.T) {
	errBad := errors.New("bad widget")
	typ := NewType(TypeConfig[string]{
		TypeURL: "type.googleapis.com/example.v1.Widget",
		Decode: func(a *anypb.Any) (string, string, error) {
			switch v := string(a.GetValue()); v {
			case "bad":
				return "xdstp://a/t/w?z=1&y=2", "", errBad
			default:
				return v, "widget " + v, nil
			}
		},
	})
	cases := []struct {
		name      string
		give      string
		wantName  string
		wantValue string
		wantErr   error
	}{
		{name: "valid", give: "w1", wantName: "w1", wantValue: "widget w1"},
		{name: "per-resource error", give: "bad", wantName: "xdstp://a/t/w?y=2&z=1", wantErr: errBad},
		{name: "no name", give: "", wantName: "", wantValue: "widget "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := typ.DecodeTyped(&anypb.Any{TypeUrl: typ.TypeURL(), Value: []byte(tc.give)})
			if name != tc.wantName || v != tc.wantValue || !errors.Is(err, tc.wantErr) {
				t.Fatalf("DecodeTyped() = %q, %q, %v; want %q, %q, %v", name, v, err, tc.wantName, tc.wantValue, tc.wantErr)
			}
			if _, ok := typ.Name(&anypb.Any{TypeUrl: typ.TypeURL()}); ok {
				t.Errorf("Name() ok = true for a type without NameField")
			}
		})
	}
}

// TestValidationError checks the error text and errors.As through
// wrapping.
func TestValidationError(t *testing.T) {
	cases := []struct {
		name string
		give error
		want string
	}{
		{name: "field and reason", give: &ValidationError{Field: "a.b[0]", Reason: "empty"}, want: "a.b[0]: empty"},
		{name: "reason only", give: &ValidationError{Reason: "bad"}, want: "bad"},
		{name: "prefixed", give: withFieldPrefix("p", invalid("q", "r %d", 1)), want: "p.q: r 1"},
		{name: "prefixed index", give: withFieldPrefix("p", invalid("[2].q", "r")), want: "p[2].q: r"},
		{name: "prefixed empty field", give: withFieldPrefix("p", invalid("", "r")), want: "p: r"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.give.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			wrapped := errors.Join(errors.New("context"), tc.give)
			var ve *ValidationError
			if !errors.As(wrapped, &ve) || ve.Error() != tc.want {
				t.Errorf("errors.As(wrapped) = %v, want the *ValidationError %q", ve, tc.want)
			}
		})
	}
}

// TestDecode_ErrorsAreValidationErrors checks that errors.As finds the
// field of a per-resource error returned through the untyped Decode.
func TestDecode_ErrorsAreValidationErrors(t *testing.T) {
	in := mustAny(t, edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_MAGLEV }))
	_, _, err := ResourceType(ClusterType).Decode(in)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "lb_policy" {
		t.Fatalf("Decode() error = %v, want a *ValidationError for field lb_policy", err)
	}
	// A top-level unmarshal failure wraps the proto error instead.
	_, _, err = ClusterType.Decode(&anypb.Any{TypeUrl: ClusterTypeURL, Value: []byte{0xff}})
	if err == nil || errors.As(err, &ve) {
		t.Fatalf("Decode(garbage) error = %v, want a non-validation decoding error", err)
	}
	if !errors.Is(err, proto.Error) {
		t.Fatalf("Decode(garbage) error = %v, want it to wrap the proto error", err)
	}
}

// TestBuiltinTypes_Constants checks that the built-in types are constants
// (an importer cannot reassign them: this file does not compile
// otherwise) and that each describes its type URL.
func TestBuiltinTypes_Constants(t *testing.T) {
	const (
		lds = ListenerType
		rds = RouteConfigType
		cds = ClusterType
		eds = EndpointsType
	)
	cases := []struct {
		give          ResourceType
		wantURL       string
		wantName      string
		wantAllInSotW bool
	}{
		{lds, ListenerTypeURL, "Listener", true},
		{rds, RouteConfigTypeURL, "RouteConfiguration", false},
		{cds, ClusterTypeURL, "Cluster", true},
		{eds, EndpointsTypeURL, "ClusterLoadAssignment", false},
	}
	for i, tc := range cases {
		if got := tc.give.TypeURL(); got != tc.wantURL {
			t.Errorf("TypeURL() = %q, want %q", got, tc.wantURL)
		}
		if got := tc.give.TypeName(); got != tc.wantName {
			t.Errorf("%s: TypeName() = %q, want %q", tc.wantURL, got, tc.wantName)
		}
		if got := tc.give.AllResourcesRequiredInSotW(); got != tc.wantAllInSotW {
			t.Errorf("%s: AllResourcesRequiredInSotW() = %v, want %v", tc.wantURL, got, tc.wantAllInSotW)
		}
		if got := BuiltinTypes()[i]; got != tc.give {
			t.Errorf("BuiltinTypes()[%d] = %v, want %v", i, got, tc.give)
		}
	}
	// The typed entry point returns the typed value.
	name, l, err := lds.DecodeTyped(mustAny(t, &v3listenerpb.Listener{Name: "svc"}))
	if name != "svc" || l != nil || err == nil {
		t.Errorf("DecodeTyped(listener without api_listener) = %q, %v, %v; want svc, nil, an error", name, l, err)
	}
}

// TestBuiltinType_NotAConstant checks that a BuiltinType that is not one
// of the four constants (another type URL, or a T that does not match its
// type URL) is an unusable type, never a panic.
func TestBuiltinType_NotAConstant(t *testing.T) {
	listener := mustAny(t, &v3listenerpb.Listener{Name: "svc"})
	for _, typ := range []interface {
		ResourceType
		NameBytes(*anypb.Any) ([]byte, bool)
	}{
		BuiltinType[*Listener]("type.googleapis.com/example.Other"),
		BuiltinType[*Cluster](ListenerTypeURL),
	} {
		if got := typ.TypeName(); got == "" {
			t.Errorf("%q: TypeName() is empty", typ.TypeURL())
		}
		if typ.AllResourcesRequiredInSotW() {
			t.Errorf("%q: AllResourcesRequiredInSotW() = true, want false", typ.TypeURL())
		}
		if _, _, err := typ.Decode(listener); err == nil || !strings.Contains(err.Error(), "is not a built-in resource type") {
			t.Errorf("%q: Decode() error = %v, want one saying it is not a built-in type", typ.TypeURL(), err)
		}
		if name, ok := typ.Name(listener); ok {
			t.Errorf("%q: Name() = %q, true; want false", typ.TypeURL(), name)
		}
		if b, ok := typ.NameBytes(listener); ok {
			t.Errorf("%q: NameBytes() = %q, true; want false", typ.TypeURL(), b)
		}
	}
	if _, c, err := BuiltinType[*Cluster](ListenerTypeURL).DecodeTyped(listener); c != nil || err == nil {
		t.Errorf("DecodeTyped() = %v, %v; want nil and an error", c, err)
	}
	// The constants are the Types their docs say.
	var _ Type[*Listener] = ListenerType
	var _ Type[*RouteConfig] = RouteConfigType
	var _ Type[*Cluster] = ClusterType
	var _ Type[*Endpoints] = EndpointsType
}
