// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	// Types that appear inside resources as google.protobuf.Any (HTTP
	// filters, load balancing policies, typed structs), so that protojson
	// can render them. The resources package registers the top-level
	// resource types, HttpConnectionManager and the aggregate cluster
	// config itself.
	_ "github.com/cncf/xds/go/udpa/type/v1"
	_ "github.com/cncf/xds/go/xds/type/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/audit_loggers/stream/v3"
)

// This file holds the rendering shared by demo, watch and status. Every
// function here is pure: it depends only on its arguments (timestamps are
// carried by the values), so the output can be checked against golden
// files.

// eventKind names the watcher method that produced an event. The values
// are those of the "event" field of `watch --output json`.
type eventKind string

const (
	eventChanged       eventKind = "changed"        // ResourceChanged
	eventResourceError eventKind = "resource_error" // ResourceError
	eventAmbientError  eventKind = "ambient_error"  // AmbientError
)

// event is one watcher call, with what is needed to print it.
type event struct {
	Time     time.Time
	Kind     eventKind
	TypeName string // short type name: "Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment"
	TypeURL  string
	Name     string // canonical resource name
	// Version is the version_info of the cached resource at the time of
	// the event, taken from the client's CSDS dump; "" when unknown.
	Version string
	// Server is the server_uri of the management server that sent the
	// cached value, for eventChanged (client.ResourceOrigin); "" when
	// unknown.
	Server string
	// Stale says the value of an eventChanged was loaded from
	// --persist-dir because no management server answered
	// (client.ResourceOrigin).
	Stale bool
	// Value is the decoded resource (*resources.Listener, …) for
	// eventChanged, nil otherwise.
	Value any
	// Raw is the resource as received for eventChanged, nil otherwise.
	Raw *anypb.Any
	// Err is the error for eventResourceError and eventAmbientError.
	Err error
}

// formatEventText renders ev as a block of lines: a header
// "[15:04:05] Type name (version v) from SERVER[, stale]: summary", then
// indented details. The block ends with a newline.
func formatEventText(ev event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s %s", ev.Time.Format(time.TimeOnly), ev.TypeName, ev.Name)
	if ev.Version != "" {
		fmt.Fprintf(&b, " (version %s)", ev.Version)
	}
	if ev.Server != "" {
		fmt.Fprintf(&b, " from %s", ev.Server)
	}
	if ev.Stale {
		b.WriteString(", stale")
	}
	b.WriteString(": ")
	switch ev.Kind {
	case eventChanged:
		switch v := ev.Value.(type) {
		case *resources.Listener:
			writeListener(&b, v)
		case *resources.RouteConfig:
			fmt.Fprintf(&b, "%s\n", plural(len(v.VirtualHosts), "virtual host", "virtual hosts"))
			writeVirtualHosts(&b, v.VirtualHosts, "  ")
		case *resources.Cluster:
			writeCluster(&b, v)
		case *resources.Endpoints:
			writeEndpoints(&b, v)
		default:
			fmt.Fprintf(&b, "changed (%T)\n", v)
		}
	case eventResourceError:
		fmt.Fprintf(&b, "resource error: %s\n", oneLine(errString(ev.Err)))
	case eventAmbientError:
		fmt.Fprintf(&b, "ambient error (the last value stays in use): %s\n", oneLine(errString(ev.Err)))
	default:
		fmt.Fprintf(&b, "%s\n", ev.Kind)
	}
	return b.String()
}

func writeListener(b *strings.Builder, l *resources.Listener) {
	if l.Server != nil {
		writeServerListener(b, l.Server)
		return
	}
	switch {
	case l.RouteConfigName != "":
		fmt.Fprintf(b, "routes via RouteConfiguration %q\n", l.RouteConfigName)
	case l.InlineRouteConfig != nil:
		rc := l.InlineRouteConfig
		fmt.Fprintf(b, "inline RouteConfiguration %q with %s\n", rc.Name, plural(len(rc.VirtualHosts), "virtual host", "virtual hosts"))
		writeVirtualHosts(b, rc.VirtualHosts, "  ")
	default:
		b.WriteString("no route configuration\n")
	}
	if len(l.HTTPFilters) > 0 {
		fmt.Fprintf(b, "  http filters: %s\n", filterNames(l.HTTPFilters))
	}
	if l.MaxStreamDuration > 0 {
		fmt.Fprintf(b, "  max stream duration: %v\n", l.MaxStreamDuration)
	}
}

// writeServerListener renders the server side of a Listener (gRFC A36):
// its address, then each filter chain and the default chain.
func writeServerListener(b *strings.Builder, sl *resources.ServerListener) {
	fmt.Fprintf(b, "server Listener on %s with %s", net.JoinHostPort(sl.Address, strconv.FormatUint(uint64(sl.Port), 10)),
		plural(len(sl.FilterChains), "filter chain", "filter chains"))
	if sl.DefaultFilterChain != nil {
		b.WriteString(" and a default filter chain")
	}
	b.WriteString("\n")
	for i := range sl.FilterChains {
		fc := &sl.FilterChains[i]
		fmt.Fprintf(b, "  filter chain %q", fc.Name)
		if m := formatChainMatch(&fc.Match); m != "" {
			fmt.Fprintf(b, " for %s", m)
		}
		if u := fc.Match.Unsupported(); u != "" {
			fmt.Fprintf(b, " (never matches: %s)", u)
		}
		b.WriteString("\n")
		writeFilterChain(b, fc)
	}
	if fc := sl.DefaultFilterChain; fc != nil {
		fmt.Fprintf(b, "  default filter chain %q\n", fc.Name)
		writeFilterChain(b, fc)
	}
}

// formatChainMatch renders a filter chain match, "" for one that matches
// every connection.
func formatChainMatch(m *resources.FilterChainMatch) string {
	var parts []string
	prefixes := func(field string, ps []netip.Prefix) {
		if len(ps) == 0 {
			return
		}
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = p.String()
		}
		parts = append(parts, field+" "+strings.Join(s, ","))
	}
	if m.DestinationPort != 0 {
		parts = append(parts, fmt.Sprintf("destination port %d", m.DestinationPort))
	}
	prefixes("destination", m.PrefixRanges)
	if len(m.ServerNames) > 0 {
		parts = append(parts, "server names "+strings.Join(m.ServerNames, ","))
	}
	if m.TransportProtocol != "" {
		parts = append(parts, "transport "+m.TransportProtocol)
	}
	if len(m.ApplicationProtocols) > 0 {
		parts = append(parts, "application protocols "+strings.Join(m.ApplicationProtocols, ","))
	}
	prefixes("direct source", m.DirectSourcePrefixRanges)
	if m.SourceType != resources.SourceTypeAny {
		parts = append(parts, "source type "+m.SourceType.String())
	}
	prefixes("source", m.SourcePrefixRanges)
	if len(m.SourcePorts) > 0 {
		s := make([]string, len(m.SourcePorts))
		for i, p := range m.SourcePorts {
			s[i] = strconv.FormatUint(uint64(p), 10)
		}
		parts = append(parts, "source ports "+strings.Join(s, ","))
	}
	return strings.Join(parts, ", ")
}

// writeFilterChain renders a filter chain's TLS, routes and HTTP filters.
func writeFilterChain(b *strings.Builder, fc *resources.FilterChain) {
	switch sc := fc.Security; {
	case sc == nil:
		b.WriteString("    plaintext (the server's fallback credentials)\n")
	default:
		fmt.Fprintf(b, "    TLS: identity %q", sc.IdentityInstanceName)
		if sc.RootInstanceName != "" {
			fmt.Fprintf(b, ", client roots %q", sc.RootInstanceName)
		}
		if sc.RequireClientCertificate {
			b.WriteString(", client certificate required")
		}
		b.WriteString("\n")
	}
	switch {
	case fc.RouteConfigName != "":
		fmt.Fprintf(b, "    routes via RouteConfiguration %q\n", fc.RouteConfigName)
	case fc.InlineRouteConfig != nil:
		rc := fc.InlineRouteConfig
		fmt.Fprintf(b, "    inline RouteConfiguration %q with %s\n", rc.Name, plural(len(rc.VirtualHosts), "virtual host", "virtual hosts"))
		writeVirtualHosts(b, rc.VirtualHosts, "      ")
	}
	fmt.Fprintf(b, "    http filters: %s\n", filterNames(fc.HTTPFilters))
}

// filterNames lists the names of an HTTP filter chain, marking the
// optional filters.
func filterNames(fs []resources.HTTPFilter) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
		if f.Optional {
			names[i] += " (optional)"
		}
	}
	return strings.Join(names, ", ")
}

func writeVirtualHosts(b *strings.Builder, vhs []resources.VirtualHost, indent string) {
	for _, vh := range vhs {
		fmt.Fprintf(b, "%svirtual host %q, domains [%s]\n", indent, vh.Name, strings.Join(vh.Domains, ", "))
		if len(vh.Routes) == 0 {
			fmt.Fprintf(b, "%s  no routes\n", indent)
		}
		for _, r := range vh.Routes {
			fmt.Fprintf(b, "%s  %s -> %s\n", indent, formatMatch(r.Match), formatAction(r.Action))
		}
	}
}

// formatMatch renders a route match, for example
// `prefix "/svc/" header x-user exact "a" (50% of RPCs)`.
func formatMatch(m resources.RouteMatch) string {
	var s string
	switch m.PathKind {
	case resources.PathKindPrefix:
		s = fmt.Sprintf("prefix %q", m.Prefix)
	case resources.PathKindPath:
		s = fmt.Sprintf("path %q", m.Path)
	case resources.PathKindSafeRegex:
		s = fmt.Sprintf("regex %q", m.SafeRegex)
	default:
		s = m.PathKind.String()
	}
	if !m.CaseSensitive {
		s += " (case-insensitive)"
	}
	for _, h := range m.Headers {
		s += " header " + h.Name
		if h.Invert {
			s += " not"
		}
		switch h.Kind {
		case resources.HeaderMatchPresent:
			s += fmt.Sprintf(" present=%t", h.Present)
		case resources.HeaderMatchRange:
			s += fmt.Sprintf(" in [%d, %d)", h.RangeStart, h.RangeEnd)
		default:
			s += fmt.Sprintf(" %s %q", h.Kind, h.Value)
		}
		if h.IgnoreCase {
			s += " (ignore case)"
		}
	}
	if m.FractionPerMillion != nil {
		s += fmt.Sprintf(" (%s of RPCs)", perMillionString(*m.FractionPerMillion))
	}
	return s
}

// formatAction renders a route action, for example `cluster "c"` or
// `weighted clusters a (weight 90), b (weight 10)`.
func formatAction(a resources.RouteAction) string {
	var s string
	switch a.Kind {
	case resources.RouteActionCluster:
		s = fmt.Sprintf("cluster %q", a.Cluster)
	case resources.RouteActionWeightedClusters:
		parts := make([]string, len(a.WeightedClusters))
		for i, wc := range a.WeightedClusters {
			parts[i] = fmt.Sprintf("%q (weight %d)", wc.Name, wc.Weight)
		}
		s = "weighted clusters " + strings.Join(parts, ", ")
	case resources.RouteActionClusterSpecifierPlugin:
		s = fmt.Sprintf("cluster specifier plugin %q", a.ClusterSpecifierPlugin)
	case resources.RouteActionUnsupported:
		s = "unsupported action (RPCs fail)"
	default:
		s = a.Kind.String()
	}
	if a.MaxStreamDuration != nil {
		s += fmt.Sprintf(", max stream duration %v", *a.MaxStreamDuration)
	}
	return s
}

func writeCluster(b *strings.Builder, c *resources.Cluster) {
	b.WriteString(c.Kind.String())
	switch c.Kind {
	case resources.ClusterKindEDS:
		if c.EDSServiceName != "" {
			fmt.Fprintf(b, ", EDS service name %q", c.EDSServiceName)
		}
	case resources.ClusterKindLogicalDNS:
		fmt.Fprintf(b, ", DNS %s:%d", c.DNSHost, c.DNSPort)
	case resources.ClusterKindAggregate:
		fmt.Fprintf(b, " of [%s]", strings.Join(c.AggregateClusters, ", "))
	}
	if c.Kind != resources.ClusterKindAggregate {
		fmt.Fprintf(b, ", %s", c.LBPolicy.Kind)
		switch c.LBPolicy.Kind {
		case resources.LBPolicyRingHash:
			fmt.Fprintf(b, " (ring size %d..%d)", c.LBPolicy.RingHashMinSize, c.LBPolicy.RingHashMaxSize)
		case resources.LBPolicyLeastRequest:
			fmt.Fprintf(b, " (choice count %d)", c.LBPolicy.LeastRequestChoiceCount)
		}
		fmt.Fprintf(b, ", max requests %d", c.MaxRequests)
		if c.LRSServerSelf {
			b.WriteString(", load reports to the management server")
		}
		if c.Security != nil {
			b.WriteString(", " + securityText(c.Security))
		}
	}
	b.WriteString("\n")
}

// securityText describes a cluster's TLS configuration (gRFC A29):
// `mTLS (roots "ca", identity "id", SANs exact "spiffe://td/backend")`.
func securityText(sc *resources.SecurityConfig) string {
	kind := "TLS"
	if sc.IdentityInstanceName != "" {
		kind = "mTLS"
	}
	roots := "system roots"
	if !sc.SystemRootCerts {
		roots = fmt.Sprintf("roots %q", sc.RootInstanceName)
	}
	parts := []string{roots}
	if sc.IdentityInstanceName != "" {
		parts = append(parts, fmt.Sprintf("identity %q", sc.IdentityInstanceName))
	}
	if len(sc.SubjectAltNameMatchers) > 0 {
		sans := make([]string, len(sc.SubjectAltNameMatchers))
		for i, m := range sc.SubjectAltNameMatchers {
			sans[i] = fmt.Sprintf("%s %q", m.Kind, m.Value)
			if m.IgnoreCase {
				sans[i] += " (ignore case)"
			}
		}
		parts = append(parts, "SANs "+strings.Join(sans, ", "))
	}
	return kind + " (" + strings.Join(parts, ", ") + ")"
}

func writeEndpoints(b *strings.Builder, e *resources.Endpoints) {
	n := 0
	for _, l := range e.Localities {
		n += len(l.Endpoints)
	}
	fmt.Fprintf(b, "%s in %s\n", plural(n, "endpoint", "endpoints"), plural(len(e.Localities), "locality", "localities"))
	for _, l := range e.Localities {
		fmt.Fprintf(b, "  priority %d, locality %s, weight %d\n", l.Priority, formatLocality(l.ID), l.Weight)
		for _, ep := range l.Endpoints {
			fmt.Fprintf(b, "    %s weight=%d health=%s", strings.Join(ep.Addresses, ","), ep.Weight, ep.HealthStatus)
			if ep.Hostname != "" {
				fmt.Fprintf(b, " hostname=%s", ep.Hostname)
			}
			b.WriteString("\n")
		}
	}
	for _, d := range e.DropOverloads {
		fmt.Fprintf(b, "  drop %s of RPCs, category %q\n", perMillionString(d.PerMillion), d.Category)
	}
}

// formatLocality renders a locality as "region/zone/sub_zone", leaving out
// empty trailing parts; "(none)" when all are empty.
func formatLocality(l resources.LocalityID) string {
	parts := []string{l.Region, l.Zone, l.SubZone}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, "/")
}

// perMillionString renders parts per million as a percentage without
// trailing zeros, for example "12.5%".
func perMillionString(pm uint32) string {
	s := fmt.Sprintf("%.4f", float64(pm)/1e4)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// errString returns the text of err, and for a size error whose limit
// client.WithMaxRecvMsgSize raises (the transport says so), the flag
// that sets it.
func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	if errors.Is(err, transport.ErrMessageTooLarge) && strings.Contains(s, "client.WithMaxRecvMsgSize") {
		s += " (xdsctl: --max-recv-msg-size BYTES)"
	}
	return s
}

// oneLine collapses s onto one line: runs of white space become one
// space, and line breaks become "; ", or a space after a colon.
func oneLine(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// jsonEvent is one line of `watch --output json`. Empty fields are left
// out: "version" and "server" when unknown, "stale" unless true,
// "resource" except for changed events, "error" except for error events.
type jsonEvent struct {
	Event    eventKind       `json:"event"`
	TypeURL  string          `json:"type_url"`
	Name     string          `json:"name"`
	Version  string          `json:"version,omitempty"`
	Server   string          `json:"server,omitempty"`
	Stale    bool            `json:"stale,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// formatEventRecord renders ev as one line of JSON or one YAML document
// (encodeRecord), ending with a newline.
func formatEventRecord(out outputFormat, ev event) ([]byte, error) {
	je := jsonEvent{Event: ev.Kind, TypeURL: ev.TypeURL, Name: ev.Name, Version: ev.Version, Server: ev.Server, Stale: ev.Stale}
	if ev.Kind == eventChanged && ev.Raw != nil {
		r, err := marshalResource(ev.Raw)
		if err != nil {
			return nil, fmt.Errorf("rendering %s %q: %w", ev.TypeName, ev.Name, err)
		}
		je.Resource = r
	}
	if ev.Err != nil {
		je.Error = ev.Err.Error()
	}
	b, err := encodeRecord(out, je)
	if err != nil {
		return nil, fmt.Errorf("rendering %s %q: %w", ev.TypeName, ev.Name, err)
	}
	return b, nil
}

// marshalResource renders a resource as a compact protojson object with an
// "@type" field and the proto field names (marshalProtoJSON). protojson
// deliberately varies its whitespace between builds, so the output is
// compacted to make it stable. A resource that
// holds an Any of a type xdsctl does not know is rendered as
// {"@type": …, "value": <base64 of the bytes>} rather than failing.
func marshalResource(a *anypb.Any) (json.RawMessage, error) {
	out, err := marshalProtoJSON(a)
	if err == nil {
		return out, nil
	}
	fallback, ferr := json.Marshal(struct {
		Type  string `json:"@type"`
		Value []byte `json:"value"`
	}{a.GetTypeUrl(), a.GetValue()})
	if ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	return fallback, nil
}

// protoJSON is how every command renders protos in JSON and YAML: with the
// proto field names ("version_info", "api_listener"), not protojson's
// lowerCamelCase JSON names, so that every key of every command's output
// is snake_case (see outputContract in output.go).
var protoJSON = protojson.MarshalOptions{UseProtoNames: true}

// marshalProtoJSON renders m as compact, stable JSON with the proto field
// names.
func marshalProtoJSON(m proto.Message) ([]byte, error) {
	raw, err := protoJSON.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("protojson: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("compacting protojson: %w", err)
	}
	return buf.Bytes(), nil
}

// originFunc returns the origin of the cached value of a resource named
// by its type URL, as a dump names it (clientOrigins, csdsStale).
type originFunc func(typeURL, name string) (client.ResourceOrigin, bool)

// jsonOrigin is one element of the "origins" field that status adds to
// the ClientConfig of its JSON and YAML output. The field names are those
// of the ClientConfig around it (proto field names); "stale" is left out
// unless true.
type jsonOrigin struct {
	TypeURL string `json:"type_url"`
	Name    string `json:"name"`
	Server  string `json:"server"`
	Stale   bool   `json:"stale,omitempty"`
}

// formatStatusStructured renders a CSDS dump as one record (encodeRecord's
// contract): the protojson of the ClientConfig with the proto field names
// on one line, or the YAML document of that JSON, ending with a newline.
// When origins is not nil and knows the origin of a resource of the dump,
// the object gets one more field after the ClientConfig's,
// "origins": [{"type_url", "name", "server", "stale"}, …] in dump order,
// which CSDS cannot carry (parse with unknown fields ignored to read the
// rest as a ClientConfig).
func formatStatusStructured(out outputFormat, cc *v3statuspb.ClientConfig, origins originFunc) ([]byte, error) {
	compact, err := marshalProtoJSON(cc)
	if err != nil {
		return nil, fmt.Errorf("rendering the CSDS dump: %w", err)
	}
	if compact, err = appendOrigins(compact, cc, origins); err != nil {
		return nil, err
	}
	return encodeRecord(out, json.RawMessage(compact))
}

// appendOrigins adds the "origins" field (see formatStatusStructured) to
// obj, the compact JSON object of cc, when there are any.
func appendOrigins(obj []byte, cc *v3statuspb.ClientConfig, origins originFunc) ([]byte, error) {
	if origins == nil {
		return obj, nil
	}
	var list []jsonOrigin
	for _, g := range cc.GetGenericXdsConfigs() {
		if o, ok := origins(g.GetTypeUrl(), g.GetName()); ok && o.ServerURI != "" {
			list = append(list, jsonOrigin{TypeURL: g.GetTypeUrl(), Name: g.GetName(), Server: o.ServerURI, Stale: o.Stale})
		}
	}
	if len(list) == 0 {
		return obj, nil
	}
	field, err := json.Marshal(map[string][]jsonOrigin{"origins": list})
	if err != nil {
		return nil, fmt.Errorf("rendering the resource origins: %w", err)
	}
	if len(obj) <= 2 { // "{}"
		return field, nil
	}
	// Splice the field into the object: obj ends with "}", field starts
	// with "{".
	return append(append(obj[:len(obj)-1:len(obj)-1], ','), field[1:]...), nil
}

// resourceKey identifies a resource of a dump.
type resourceKey struct{ typeURL, name string }

// formatStatusTable writes a CSDS dump as a table with the columns TYPE,
// NAME, STATUS, VERSION, SERVER, LAST UPDATED and ERROR, one row per
// resource in dump order. STATUS is the client_status, with "(stale)"
// appended (ACKED(stale)) for a value served from persistence. SERVER is
// the server_uri of the management server that sent the cached value, from
// origins (nil: unknown). LAST UPDATED is the dump's last_updated in UTC,
// RFC 3339, to the second. ERROR is the error_state of a NACKed or stale
// resource; for a resource still REQUESTED it is notes[key] when set (for
// example the connection error a watcher received). Empty cells show "-".
func formatStatusTable(w io.Writer, cc *v3statuspb.ClientConfig, notes map[resourceKey]string, origins originFunc) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tNAME\tSTATUS\tVERSION\tSERVER\tLAST UPDATED\tERROR")
	for _, g := range cc.GetGenericXdsConfigs() {
		status, server := g.GetClientStatus().String(), ""
		if origins != nil {
			if o, ok := origins(g.GetTypeUrl(), g.GetName()); ok {
				server = o.ServerURI
				if o.Stale {
					status += staleSuffix
				}
			}
		}
		errText := ""
		if es := g.GetErrorState(); es != nil {
			errText = es.GetDetails()
			if v := es.GetVersionInfo(); v != "" {
				errText = fmt.Sprintf("version %s rejected: %s", v, errText)
			}
		} else if g.GetClientStatus() == v3adminpb.ClientResourceStatus_REQUESTED {
			errText = notes[resourceKey{g.GetTypeUrl(), g.GetName()}]
		}
		updated := ""
		if lu := g.GetLastUpdated(); lu != nil {
			updated = lu.AsTime().UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			cell(shortTypeName(g.GetTypeUrl())), cell(g.GetName()), cell(status),
			cell(g.GetVersionInfo()), cell(server), cell(updated), cell(errText))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the status table: %w", err)
	}
	return nil
}

// staleSuffix marks the STATUS of a value served from persistence.
const staleSuffix = "(stale)"

// cell makes s fit in one table cell.
func cell(s string) string {
	s = oneLine(strings.ReplaceAll(s, "\t", " "))
	if s == "" {
		return "-"
	}
	return s
}

// shortTypeName returns the short name of a type URL: the library's
// TypeName for the built-in types, the last element otherwise.
func shortTypeName(typeURL string) string {
	for _, t := range resources.BuiltinTypes() {
		if t.TypeURL() == typeURL {
			return t.TypeName()
		}
	}
	if i := strings.LastIndexAny(typeURL, "/."); i >= 0 {
		return typeURL[i+1:]
	}
	return typeURL
}

// versionFromDump returns the version_info of the resource (typeURL, name)
// in cc. When raw is not nil, the version is returned only if the dumped
// resource is raw, so that a version is never attached to a value it does
// not belong to; "" otherwise.
func versionFromDump(cc *v3statuspb.ClientConfig, typeURL, name string, raw *anypb.Any) string {
	for _, g := range cc.GetGenericXdsConfigs() {
		if g.GetTypeUrl() != typeURL || g.GetName() != name {
			continue
		}
		if raw != nil && !proto.Equal(g.GetXdsConfig(), raw) {
			return ""
		}
		return g.GetVersionInfo()
	}
	return ""
}
