// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3aggregateclusterpb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
)

// ClusterTypeURL is the type URL of CDS resources.
const ClusterTypeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// ClusterType, a Type[*Cluster], is the CDS resource type: Cluster resources, decoded to
// *Cluster and validated by. A SotW response carries every
// subscribed cluster. Its name is found without decoding.
// It is a constant: importers cannot reassign it.
const ClusterType BuiltinType[*Cluster] = ClusterTypeURL

// clusterConfig describes ClusterType.
var clusterConfig = TypeConfig[*Cluster]{
	TypeURL:                    ClusterTypeURL,
	TypeName:                   "Cluster",
	AllResourcesRequiredInSotW: true,
	Decode:                     func(inner *anypb.Any) (string, *Cluster, error) { return decodeCluster(inner, decodeOptions{}) },
	NameField:                  1, // name
}

const (
	// aggregateClusterTypeName is the cluster_type name of aggregate
	// clusters (gRFC A37).
	aggregateClusterTypeName = "envoy.clusters.aggregate"
	// aggregateClusterConfigTypeURL is the type of their typed_config.
	aggregateClusterConfigTypeURL = "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"

	defaultMaxRequests = 1024 // circuit breaking, gRFC A32
)

// Cluster is a decoded Cluster resource: what a gRPC client needs to reach
// one upstream cluster. It is immutable once decoded and shared by every
// watcher: do not modify it, its slices or its map. (The small fields
// come first: 176 bytes, a size class, at tens of thousands of cached
// clusters.)
type Cluster struct {
	// Name is the resource name in canonical form.
	Name string
	// Kind says how the cluster's endpoints are found, and which of the
	// fields from EDSServiceName to AggregateClusters are set.
	Kind ClusterKind
	// LRSServerSelf reports whether lrs_server is set (it must be "self"):
	// load reports go to the management server that sent the cluster.
	LRSServerSelf bool
	// HTTPConnect reports that transport_socket is the HTTP/1.1 proxy
	// transport socket (gRFC A86): connections to an endpoint that has a
	// proxy address (Endpoint.ProxyAddress, else its
	// Locality.ProxyAddress) go through an HTTP CONNECT tunnel to it;
	// Security is then that of the transport socket it wraps. Set only
	// when the type was made with WithHTTPConnect; without, such a
	// Cluster is invalid.
	HTTPConnect bool
	// LRSReportEndpointMetrics is lrs_report_endpoint_metrics: the fields
	// of the backends' ORCA load reports that load reports carry (gRFC
	// A85); the keys of BackendMetricsNamed are LRSNamedMetrics().
	LRSReportEndpointMetrics BackendMetrics
	// OverrideHostStatus is common_lb_config.override_host_status: the
	// health statuses of the endpoints a session may be pinned to (gRFC
	// A55). Only UNKNOWN, HEALTHY and DRAINING count; the zero value,
	// when unset, is UNKNOWN and HEALTHY.
	OverrideHostStatus HealthStatusSet
	// MaxRequests is the maximum number of concurrent RPCs to the cluster:
	// circuit_breakers.thresholds[priority=DEFAULT].max_requests, 1024 when
	// unset (gRFC A32).
	MaxRequests uint32
	// EDSServiceName is eds_cluster_config.service_name for ClusterKindEDS,
	// as received: the name of the Endpoints resource to watch; "" means
	// the cluster's Name. Always set when Name is an xdstp name.
	EDSServiceName string
	// DNSHost and DNSPort are the address of the single endpoint of a
	// ClusterKindLogicalDNS cluster: a host name (or IP literal, without
	// brackets) to resolve, never empty, and a non-zero port.
	DNSHost string
	DNSPort uint32
	// MaxRetries is the maximum number of retries in progress to the
	// cluster for an HTTP data plane:
	// circuit_breakers.thresholds[priority=DEFAULT].max_retries, 3 when
	// unset (Envoy's default); a value above 65535 reads as 65535, which
	// no process reaches. gRPC ignores it. (It and UpstreamProtocol sit
	// beside DNSPort, so that the struct stays in its size class.)
	MaxRetries uint16
	// UpstreamProtocol is the HTTP protocol of the cluster's connections
	// for an HTTP data plane: from the
	// typed_extension_protocol_options of
	// envoy.extensions.upstreams.http.v3.HttpProtocolOptions, else the
	// deprecated http2_protocol_options and protocol_selection. gRPC
	// always speaks HTTP/2.
	UpstreamProtocol UpstreamHTTPProtocol
	// AggregateClusters are the child clusters of a ClusterKindAggregate
	// cluster, as received, highest priority first; never empty (gRFC A37).
	AggregateClusters []string
	// LBPolicy is the load balancing policy for the cluster's endpoints,
	// from load_balancing_policy when set, else from lb_policy. Aggregate
	// clusters have one too, unused (gRFC A37).
	LBPolicy LBPolicy
	// Security is the TLS configuration from transport_socket (or the
	// transport socket the HTTP/1.1 proxy socket wraps); nil when there is
	// none (gRFC A29, A86).
	Security *SecurityConfig
	// OutlierDetection is outlier_detection with defaults applied; nil
	// when unset (gRFC A50).
	OutlierDetection *OutlierDetection
	// Audiences are the audiences of the GCP authentication filter (gRFC
	// A83), keyed by filter instance name: the url of each entry of
	// metadata.typed_filter_metadata of type
	// envoy.extensions.filters.http.gcp_authn.v3.Audience (which must not
	// be empty). nil when there are none.
	Audiences map[string]string

	raw rawBytes // the serialized resource as received (the unwrapped Any's value)
}

// Raw returns the resource exactly as received, after removing any
// Resource wrapper: a new Any on each call (type URL
// ClusterTypeURL) with a copy of the bytes.
func (c *Cluster) Raw() *anypb.Any { return c.raw.toAny(ClusterTypeURL) }

// ClusterKind is the discovery type of a cluster. The zero value is not a
// valid kind; Decode never returns it.
type ClusterKind uint8

// The supported cluster kinds.
const (
	// ClusterKindEDS clusters get their endpoints from an Endpoints
	// resource (type EDS).
	ClusterKindEDS ClusterKind = iota + 1
	// ClusterKindLogicalDNS clusters resolve one DNS name (type
	// LOGICAL_DNS, gRFC A37).
	ClusterKindLogicalDNS
	// ClusterKindAggregate clusters are a prioritised list of other
	// clusters (cluster_type envoy.clusters.aggregate, gRFC A37).
	ClusterKindAggregate
)

// String returns "EDS", "LOGICAL_DNS" or "AGGREGATE".
func (k ClusterKind) String() string {
	switch k {
	case ClusterKindEDS:
		return "EDS"
	case ClusterKindLogicalDNS:
		return "LOGICAL_DNS"
	case ClusterKindAggregate:
		return "AGGREGATE"
	default:
		return fmt.Sprintf("ClusterKind(%d)", uint8(k))
	}
}

// clusterMsgs recycles the top-level message decodeCluster unmarshals
// into: a v3clusterpb.Cluster is large (every field of every cluster type),
// and allocating and scanning it is a good part of the cost of decoding
// beyond the unmarshal itself. The decoded Cluster keeps no pointer to it,
// only to its sub-messages and strings, which protobuf allocates on their
// own; it is reset before it is put back, so that the pool keeps nothing
// of a resource alive.
var clusterMsgs = sync.Pool{New: func() any { return new(v3clusterpb.Cluster) }}

// decodeCluster decodes a Cluster with the options o.
func decodeCluster(inner *anypb.Any, o decodeOptions) (string, *Cluster, error) {
	c := clusterMsgs.Get().(*v3clusterpb.Cluster)
	defer func() {
		proto.Reset(c)
		clusterMsgs.Put(c)
	}()
	if err := unmarshalResource(inner, c, "Cluster"); err != nil {
		return "", nil, err
	}
	name := c.GetName()
	if name == "" {
		return "", nil, errEmptyName("name")
	}
	out, err := clusterFromProto(name, c, o.httpConnect)
	if err != nil {
		return name, nil, err
	}
	if o.certProviders != nil {
		if err := checkCertificateProviders(out, o.certProviders); err != nil {
			return name, nil, err
		}
	}
	out.raw = keepRaw(inner.GetValue())
	return name, out, nil
}

func clusterFromProto(name string, c *v3clusterpb.Cluster, httpConnect bool) (*Cluster, error) {
	out := &Cluster{Name: CanonicalName(name), MaxRequests: defaultMaxRequests, MaxRetries: defaultMaxRetries}

	// The checks run in grpc-go's order, so that a Cluster with several
	// problems reports the same one.
	lb, err := legacyLBPolicy(c)
	if err != nil {
		return nil, err
	}
	if out.Security, out.HTTPConnect, err = securityFromCluster(c, httpConnect); err != nil {
		return nil, err
	}
	if out.OutlierDetection, err = outlierDetectionFromProto(c.GetOutlierDetection()); err != nil {
		return nil, err
	}
	if lbp := c.GetLoadBalancingPolicy(); lbp != nil {
		if lb, err = lbPolicyFromProto(lbList{proto: lbp}, 0); err != nil {
			return nil, withFieldPrefix("load_balancing_policy", err)
		}
	}
	lb.HealthyPanicThreshold = healthyPanicThreshold(c)
	out.LBPolicy = lb
	out.OverrideHostStatus = overrideHostStatus(c)
	if out.Audiences, err = audiencesFromMetadata(c.GetMetadata()); err != nil {
		return nil, err
	}
	if out.UpstreamProtocol, err = upstreamProtocol(c); err != nil {
		return nil, err
	}

	for _, t := range c.GetCircuitBreakers().GetThresholds() {
		if t.GetPriority() != v3corepb.RoutingPriority_DEFAULT {
			continue
		}
		if mr := t.GetMaxRequests(); mr != nil {
			out.MaxRequests = mr.GetValue()
		}
		if mr := t.GetMaxRetries(); mr != nil {
			out.MaxRetries = uint16(min(mr.GetValue(), math.MaxUint16))
		}
		break // the first DEFAULT threshold applies, as in grpc-go
	}

	if lrs := c.GetLrsServer(); lrs != nil {
		if lrs.GetSelf() == nil {
			return nil, invalid("lrs_server", "config source must be self")
		}
		out.LRSServerSelf = true
	}
	out.LRSReportEndpointMetrics = parseBackendMetrics(c.GetLrsReportEndpointMetrics())

	switch dt := c.GetClusterDiscoveryType().(type) {
	case *v3clusterpb.Cluster_Type:
		switch dt.Type {
		case v3clusterpb.Cluster_EDS:
			out.Kind = ClusterKindEDS
			eds := c.GetEdsClusterConfig()
			if err := checkConfigSource("eds_cluster_config.eds_config", eds.GetEdsConfig()); err != nil {
				return nil, err
			}
			out.EDSServiceName = eds.GetServiceName()
			// an xdstp cluster name needs an explicit service name.
			if out.EDSServiceName == "" && strings.HasPrefix(name, xdstpScheme+":") {
				return nil, invalid("eds_cluster_config.service_name", "empty, but required with an xdstp cluster name")
			}
		case v3clusterpb.Cluster_LOGICAL_DNS:
			out.Kind = ClusterKindLogicalDNS
			if out.DNSHost, out.DNSPort, err = logicalDNSAddress(c); err != nil {
				return nil, err
			}
		default:
			return nil, invalid("type", "unsupported cluster type %v", dt.Type)
		}
	case *v3clusterpb.Cluster_ClusterType:
		ct := dt.ClusterType
		if ct.GetName() != aggregateClusterTypeName {
			return nil, invalid("cluster_type.name", "unsupported custom cluster type %q", ct.GetName())
		}
		tc := ct.GetTypedConfig()
		if tc.GetTypeUrl() != aggregateClusterConfigTypeURL {
			return nil, invalid("cluster_type.typed_config", "type URL %q, want %q", tc.GetTypeUrl(), aggregateClusterConfigTypeURL)
		}
		cfg := &v3aggregateclusterpb.ClusterConfig{}
		if err := proto.Unmarshal(tc.GetValue(), cfg); err != nil {
			return nil, invalid("cluster_type.typed_config", "decoding ClusterConfig: %w", err)
		}
		if len(cfg.GetClusters()) == 0 {
			return nil, invalid("cluster_type.typed_config.clusters", "empty")
		}
		out.Kind = ClusterKindAggregate
		out.AggregateClusters = cfg.GetClusters()
	default:
		// Unreachable in practice: an absent oneof reads as type STATIC.
		return nil, invalid("type", "unsupported cluster type STATIC")
	}
	return out, nil
}

// logicalDNSAddress returns the host and port of a LOGICAL_DNS cluster:
// load_assignment must hold exactly one locality with exactly one endpoint
// whose socket address has a host, a non-zero port and no resolver_name
// (R-17.4, gRFC A37).
func logicalDNSAddress(c *v3clusterpb.Cluster) (string, uint32, error) {
	la := c.GetLoadAssignment()
	if la == nil {
		return "", 0, invalid("load_assignment", "missing, required for a LOGICAL_DNS cluster")
	}
	if n := len(la.GetEndpoints()); n != 1 {
		return "", 0, invalid("load_assignment.endpoints", "%d localities, a LOGICAL_DNS cluster needs exactly one", n)
	}
	lbs := la.GetEndpoints()[0].GetLbEndpoints()
	if n := len(lbs); n != 1 {
		return "", 0, invalid("load_assignment.endpoints[0].lb_endpoints", "%d endpoints, a LOGICAL_DNS cluster needs exactly one", n)
	}
	const field = "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address"
	sa := lbs[0].GetEndpoint().GetAddress().GetSocketAddress()
	switch {
	case sa == nil:
		return "", 0, invalid(field, "missing")
	case sa.GetResolverName() != "":
		return "", 0, invalid(field+".resolver_name", "custom resolvers are not supported")
	case sa.GetAddress() == "":
		return "", 0, invalid(field+".address", "empty")
	case sa.GetPortValue() == 0:
		return "", 0, invalid(field+".port_value", "missing or zero")
	}
	return sa.GetAddress(), sa.GetPortValue(), nil
}
