// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// The checks of responses look at every response the
// other checks receive, as it arrives: the observer collects what they
// find, per variant.

// Names of the checks of responses.
const (
	checkResponseNonce  = "response_nonce"
	checkResponseType   = "response_type"
	checkDuplicateNames = "duplicate_names"
	checkResponseSize   = "response_size"
)

// maxExamples is how many violations of one check a detail quotes.
const maxExamples = 3

// observer collects the findings of the checks of responses.
type observer struct {
	maxSize int // Config.MaxResponseBytes

	// Guarded by mu.
	mu        sync.Mutex
	responses map[Variant]int                    // responses seen
	found     map[Variant]map[string]*violations // by check name
}

// violations are the findings of one check of responses on one variant.
type violations struct {
	count    int
	examples []string
}

func newObserver(maxSize int) *observer {
	return &observer{maxSize: maxSize, responses: make(map[Variant]int), found: make(map[Variant]map[string]*violations)}
}

func (o *observer) addLocked(v Variant, check, format string, args ...any) {
	byCheck := o.found[v]
	if byCheck == nil {
		byCheck = make(map[string]*violations)
		o.found[v] = byCheck
	}
	vs := byCheck[check]
	if vs == nil {
		vs = &violations{}
		byCheck[check] = vs
	}
	vs.count++
	if len(vs.examples) < maxExamples {
		vs.examples = append(vs.examples, fmt.Sprintf(format, args...))
	}
}

// observe looks at r, received on ws (nil for a REST poll). The caller
// holds the session's mu, which guards ws's maps.
func (o *observer) observe(v Variant, r *response, ws *wireStream) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.responses[v]++
	tn := typeName(r.typeURL)

	// a nonce, not reused on the stream.
	if ws != nil {
		switch {
		case r.nonce == "":
			o.addLocked(v, checkResponseNonce, "a %s response without a nonce", tn)
		case ws.nonces[r.nonce]:
			o.addLocked(v, checkResponseNonce, "nonce %q used twice on one stream", r.nonce)
		}
		ws.nonces[r.nonce] = true
	}

	// the type requested, resources of that type.
	switch {
	case ws != nil && ws.typeURL != "" && r.typeURL != ws.typeURL:
		o.addLocked(v, checkResponseType, "a response of type %q on the %s stream", r.typeURL, typeName(ws.typeURL))
	case ws != nil && !ws.requested[r.typeURL]:
		o.addLocked(v, checkResponseType, "a response of type %q, never requested on the stream", r.typeURL)
	}
	if r.sotw != nil {
		for i, a := range r.sotw.GetResources() {
			if _, inner, err := resourceName(a); err != nil {
				o.addLocked(v, checkResponseType, "resource %d of a %s response: %v", i, tn, err)
			} else if inner != "" && inner != r.typeURL {
				o.addLocked(v, checkResponseType, "resource %d of a %s response is a %s", i, tn, inner)
			}
		}
	}
	if r.delta != nil {
		for i, res := range r.delta.GetResources() {
			if res.GetResource() == nil {
				continue // a heartbeat (xDS protocol, "TTL")
			}
			name, inner, err := resourceName(res.GetResource())
			switch {
			case err != nil:
				o.addLocked(v, checkResponseType, "resource %d (%q) of a %s response: %v", i, res.GetName(), tn, err)
			case inner != r.typeURL:
				o.addLocked(v, checkResponseType, "resource %d (%q) of a %s response is a %s", i, res.GetName(), tn, inner)
			case res.GetName() == "":
				o.addLocked(v, checkResponseType, "resource %d of a %s response has no name", i, tn)
			case name != res.GetName():
				o.addLocked(v, checkResponseType, "resource %q of a %s response holds a resource named %q", res.GetName(), tn, name)
			}
		}
	}

	// no name twice.
	seen := make(map[string]bool)
	for _, n := range append(append([]string(nil), r.names...), r.removed...) {
		if n == "" {
			continue
		}
		if seen[n] {
			o.addLocked(v, checkDuplicateNames, "%q twice in one %s response", n, tn)
		}
		seen[n] = true
	}

	// within the size limit.
	if r.size > o.maxSize {
		o.addLocked(v, checkResponseSize, "a %s response of %d bytes (limit %d)", tn, r.size, o.maxSize)
	}
}

// streamError notes why a stream the kit did not end ended: a response
// above the receive limit counts against response_size.
func (o *observer) streamError(v Variant, err error) {
	if !errors.Is(err, transport.ErrMessageTooLarge) && status.Code(err) != codes.ResourceExhausted {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addLocked(v, checkResponseSize, "a stream failed: %v", err)
}

// undecodable notes a message that is not a response of the stream's
// protocol.
func (o *observer) undecodable(v Variant, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.responses[v]++
	o.addLocked(v, checkResponseType, "a message that is not a response: %v", err)
}

// verdict returns the outcome of the check of responses named check on v.
func (o *observer) verdict(v Variant, check string) outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.responses[v]
	if n == 0 {
		return skip("no responses were received")
	}
	vs := o.found[v][check]
	if vs == nil {
		return pass("%d responses examined", n)
	}
	more := ""
	if vs.count > len(vs.examples) {
		more = fmt.Sprintf("; and %d more", vs.count-len(vs.examples))
	}
	return fail("%d of %d responses: %s%s", vs.count, n, strings.Join(vs.examples, "; "), more)
}

// resourceName returns the name and type URL of one resource of a
// response, a Resource wrapper removed: the type URL "" and the wrapper's
// name for a heartbeat. The name of a resource of another type than the
// four built-in ones is its wrapper's, or "". err says why the resource
// does not decode.
func resourceName(a *anypb.Any) (name, typeURL string, err error) {
	inner, wrapperName, _, err := resources.UnwrapResource(a)
	if err != nil {
		return "", "", err
	}
	if inner == nil {
		return wrapperName, "", nil
	}
	typeURL = inner.GetTypeUrl()
	var (
		m     proto.Message
		named func() string
	)
	switch typeURL {
	case resources.ListenerTypeURL:
		l := &v3listenerpb.Listener{}
		m, named = l, l.GetName
	case resources.RouteConfigTypeURL:
		rc := &v3routepb.RouteConfiguration{}
		m, named = rc, rc.GetName
	case resources.ClusterTypeURL:
		c := &v3clusterpb.Cluster{}
		m, named = c, c.GetName
	case resources.EndpointsTypeURL:
		e := &v3endpointpb.ClusterLoadAssignment{}
		m, named = e, e.GetClusterName
	default:
		if _, err := inner.UnmarshalNew(); err != nil {
			return wrapperName, typeURL, fmt.Errorf("does not decode: %w", err)
		}
		return wrapperName, typeURL, nil
	}
	if err := proto.Unmarshal(inner.GetValue(), m); err != nil {
		return "", typeURL, fmt.Errorf("does not decode as a %s: %w", typeName(typeURL), err)
	}
	if named() == "" {
		return "", typeURL, fmt.Errorf("a %s without a name", typeName(typeURL))
	}
	return named(), typeURL, nil
}

// typeName is the short name of a type URL, for details:
// "Listener", "ClusterLoadAssignment".
func typeName(typeURL string) string {
	if i := strings.LastIndexByte(typeURL, '.'); i >= 0 {
		return typeURL[i+1:]
	}
	return typeURL
}
