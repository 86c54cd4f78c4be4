// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"

	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

var watchCommand = &command{
	name:     "watch",
	synopsis: "[--bootstrap FILE | --server HOST:PORT | --rest URL | --file PATH] [--delta] [--per-type] [--persist-dir DIR [--persist-timeout D]] [-o text|json|yaml] [--resource-timeout D] TYPE/NAME...",
	summary:  "print every update of resources until interrupted",
	help: `Watch subscribes to the named resources and prints every event the client
delivers for them (changed, resource_error, ambient_error) until it is
interrupted (Ctrl-C), then exits 0. TYPE/* watches every resource of the
type that the management server sends (a wildcard subscription).

A changed event names the management server (server_uri) that sent the
value, "from HOST:PORT", which with fallback (gRFC A71) may be a
lower-priority server, and says "stale" when the value is the copy saved
in --persist-dir, served because no management server answered within
--persist-timeout (10s by default) of the start; an ambient_error wrapping
the client's ErrStale follows it.

With --output json (-o json) it prints exactly one JSON object per line:
  {"event":"changed|resource_error|ambient_error","type_url":"…","name":"…",
   "version":"…","server":"…","stale":true,"resource":{…},"error":"…"}
Empty fields are left out: "resource" (the protojson of the resource as
received, with its "@type" and the proto field names, "api_listener"),
"server" and "stale" come only with changed
("stale" only when true), "error" only with the two error events, and
"version" only when known. The version is the version_info of the cached
resource in the client's CSDS dump at the time of the event; it is left out
when the dump has moved on to another value.
With --output yaml it prints the same objects as YAML documents, each
starting with "---".

` + resourceArgHelp,
	setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var cf clientFlags
		cf.register(fs)
		out := registerOutput(fs)
		return func(ctx context.Context, e *env, args []string) error {
			return runWatch(ctx, e, &cf, *out, args)
		}
	},
}

// runWatch implements the watch command.
func runWatch(ctx context.Context, e *env, cf *clientFlags, out outputFormat, args []string) error {
	refs, err := parseResourceArgs(args)
	if err != nil {
		return err
	}
	c, err := cf.newClient(e)
	if err != nil {
		return err
	}
	defer c.Close()

	// Callbacks run serially on the client's goroutine; a write error (a
	// closed pipe) is kept and reported once the watch stops.
	var writeErr error
	emit := func(ev event) {
		if writeErr == nil {
			writeErr = writeEvent(e.stdout, out, ev)
		}
	}
	cancels := make([]func(), 0, len(refs))
	for _, r := range refs {
		cancels = append(cancels, r.watch(c, e, emit))
	}
	<-ctx.Done()
	for _, cancel := range cancels {
		cancel()
	}
	c.Close() // waits for a callback in progress, so writeErr is settled
	return writeErr
}

// writeEvent writes ev to w in format out.
func writeEvent(w io.Writer, out outputFormat, ev event) error {
	var b []byte
	if out.structured() {
		var err error
		if b, err = formatEventRecord(out, ev); err != nil {
			return err
		}
	} else {
		b = []byte(formatEventText(ev))
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// rawResource is implemented by the decoded resource types.
type rawResource interface {
	Raw() *anypb.Any
}

// resourceKind is a resource type as the command line names it.
type resourceKind struct {
	names    []string // accepted TYPE spellings, lower case
	typeName string   // short name, as in messages
	typeURL  string
	typ      resources.ResourceType
	// watch watches the resource name of this kind with c, or every
	// resource of the kind when name is wildcardName, and calls emit with
	// every event, on the client's callback goroutine, with the version
	// looked up in the client's dump.
	watch func(c *client.Client, e *env, name string, emit func(event)) (cancel func())
}

// wildcardName is the NAME of TYPE/NAME that watches every resource of
// the type (client.WatchAll).
const wildcardName = "*"

// The built-in resource kinds. Each is named by a short name, the name of
// its xDS service and the type name the status table and watch print
// (resources.Type.TypeName: "RouteConfiguration"), so that what xdsctl
// prints can be pasted back; newResourceKind adds the type name.
var (
	listenerKind  = newResourceKind(resources.ListenerType, "listener", "lds")
	routeKind     = newResourceKind(resources.RouteConfigType, "route", "rds")
	clusterKind   = newResourceKind(resources.ClusterType, "cluster", "cds")
	endpointsKind = newResourceKind(resources.EndpointsType, "endpoints", "eds")
)

// resourceKinds are the kinds TYPE/NAME arguments can name.
var resourceKinds = []*resourceKind{listenerKind, routeKind, clusterKind, endpointsKind}

// kindOf returns the kind of typeURL, nil for a type xdsctl does not know.
func kindOf(typeURL string) *resourceKind {
	for _, k := range resourceKinds {
		if k.typeURL == typeURL {
			return k
		}
	}
	return nil
}

// newResourceKind returns the kind of typ, named names on the command line.
func newResourceKind[T rawResource](typ resources.Type[T], names ...string) *resourceKind {
	if n := strings.ToLower(typ.TypeName()); !slices.Contains(names, n) {
		names = append(names, n)
	}
	k := &resourceKind{names: names, typeName: typ.TypeName(), typeURL: typ.TypeURL(), typ: typ}
	k.watch = func(c *client.Client, e *env, name string, emit func(event)) func() {
		wildcard := name == wildcardName
		if !wildcard {
			name = resources.CanonicalName(name)
		}
		deliver := func(kind eventKind, v any, raw *anypb.Any, err error) {
			ev := event{
				Time: e.now(), Kind: kind, TypeName: k.typeName, TypeURL: k.typeURL, Name: name,
				Value: v, Raw: raw, Err: err,
			}
			if wildcard {
				// The event is about one resource of the type: name it.
				ev.Name = eventResourceName(typ, raw, err)
			}
			// Flow control holds the stream until this callback returns,
			// so the dump still describes the response being delivered.
			ev.Version = versionFromDump(c.Dump(), k.typeURL, ev.Name, raw)
			if kind == eventChanged {
				if o, ok := c.ResourceOrigin(typ, ev.Name); ok {
					ev.Server, ev.Stale = o.ServerURI, o.Stale
				}
			}
			emit(ev)
		}
		w := watcher.Funcs[T]{
			OnChanged:       func(v T) { deliver(eventChanged, v, v.Raw(), nil) },
			OnResourceError: func(err error) { deliver(eventResourceError, nil, nil, err) },
			OnAmbientError:  func(err error) { deliver(eventAmbientError, nil, nil, err) },
		}
		if wildcard {
			return client.WatchAll(c, typ, w)
		}
		return client.Watch(c, typ, name, w)
	}
	return k
}

// eventResourceName returns the name of the resource a wildcard watch
// reports on: from the resource as received, or from the error, which
// names it (*client.ResourceError); "*" when the event concerns the whole
// type (a connection error).
func eventResourceName(typ resources.ResourceType, raw *anypb.Any, err error) string {
	if inner, err := resources.Unwrap(raw); raw != nil && err == nil {
		if name, ok := typ.Name(inner); ok {
			return name
		}
	}
	var re *client.ResourceError
	if errors.As(err, &re) && re.Name != "" {
		return re.Name
	}
	return wildcardName
}

// resourceRef is a parsed TYPE/NAME argument.
type resourceRef struct {
	kind *resourceKind
	name string // canonical, or wildcardName
}

// wildcard reports whether r names every resource of its type.
func (r resourceRef) wildcard() bool { return r.name == wildcardName }

// watch watches r with c; see resourceKind.watch.
func (r resourceRef) watch(c *client.Client, e *env, emit func(event)) func() {
	return r.kind.watch(c, e, r.name, emit)
}

// key returns the key of r in a dump.
func (r resourceRef) key() resourceKey { return resourceKey{r.kind.typeURL, r.name} }

// matches reports whether the dump entry g is a resource r names: the
// resource of its name, or any of its type for a wildcard.
func (r resourceRef) matches(g *v3statuspb.ClientConfig_GenericXdsConfig) bool {
	return g.GetTypeUrl() == r.kind.typeURL && (r.wildcard() || g.GetName() == r.name)
}

// parseResourceArg parses TYPE/NAME, splitting at the first "/": the name
// may contain slashes (xdstp names). TYPE is any name of a resourceKind,
// in any case.
func parseResourceArg(s string) (resourceRef, error) {
	typ, name, ok := strings.Cut(s, "/")
	if !ok || name == "" {
		return resourceRef{}, usageErrorf("resource %q: want TYPE/NAME", s)
	}
	typ = strings.ToLower(typ)
	if name != wildcardName {
		name = resources.CanonicalName(name)
	}
	for _, k := range resourceKinds {
		for _, n := range k.names {
			if n == typ {
				return resourceRef{kind: k, name: name}, nil
			}
		}
	}
	return resourceRef{}, usageErrorf("resource %q: unknown type %q, want listener, route, cluster or endpoints (or lds, rds, cds, eds, or the type names Listener, RouteConfiguration, Cluster, ClusterLoadAssignment)", s, typ)
}

// parseResourceArgs parses the TYPE/NAME arguments, dropping repeats; at
// least one is required.
func parseResourceArgs(args []string) ([]resourceRef, error) {
	if len(args) == 0 {
		return nil, usageErrorf("no resources given, want TYPE/NAME...")
	}
	var refs []resourceRef
	seen := make(map[resourceKey]bool)
	for _, a := range args {
		r, err := parseResourceArg(a)
		if err != nil {
			return nil, err
		}
		if seen[r.key()] {
			continue
		}
		seen[r.key()] = true
		refs = append(refs, r)
	}
	return refs, nil
}
