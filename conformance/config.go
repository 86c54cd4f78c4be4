// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/proxyless/xds/transport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Default values of Config.
const (
	// DefaultTimeout is how long the kit waits for a response the server
	// must send (Config.Timeout).
	DefaultTimeout = 5 * time.Second
	// DefaultQuiet is how long the kit waits before it concludes that the
	// server sends nothing more (Config.Quiet).
	DefaultQuiet = time.Second
	// DefaultMaxResponseBytes is the largest response a server may send:
	// gRPC's default receive limit.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultNodeID is the node ID the kit sends when Config.Node is nil.
	DefaultNodeID = "xds-conformance"
)

// Variant is a way of speaking to a management server: one of the four
// variants of the xDS transport protocol over gRPC (xDS protocol, "Variants of the
// xDS Transport Protocol"), or REST-JSON polling.
type Variant string

// The variants. The kit runs every check on each variant it applies to.
const (
	// SotW is state of the world on the aggregated stream
	// (AggregatedDiscoveryService.StreamAggregatedResources).
	SotW Variant = "sotw"
	// Delta is incremental xDS on the aggregated stream
	// (AggregatedDiscoveryService.DeltaAggregatedResources).
	Delta Variant = "delta"
	// SotWPerType is state of the world on one stream per type
	// (ListenerDiscoveryService.StreamListeners and the others).
	SotWPerType Variant = "sotw-per-type"
	// DeltaPerType is incremental xDS on one stream per type
	// (ListenerDiscoveryService.DeltaListeners and the others).
	DeltaPerType Variant = "delta-per-type"
	// REST is REST-JSON polling (POST /v3/discovery:listeners and the
	// others), state of the world.
	REST Variant = "rest"
)

// Variants returns every variant, in the order the kit reports them.
func Variants() []Variant { return []Variant{SotW, Delta, SotWPerType, DeltaPerType, REST} }

func (v Variant) delta() bool   { return v == Delta || v == DeltaPerType }
func (v Variant) perType() bool { return v == SotWPerType || v == DeltaPerType }
func (v Variant) grpc() bool    { return v != REST }

// Op is what a Change asks the server to do.
type Op string

// The operations of a Change.
const (
	// Update gives the resource new content, so that its version (and the
	// type's version_info) changes.
	Update Op = "update"
	// Delete removes the resource.
	Delete Op = "delete"
	// Restore puts back, as it was, the resource the last Delete of its
	// type and name removed.
	Restore Op = "restore"
)

// Change asks the management server to change one of its resources, for
// the checks of updates and deletions.
type Change struct {
	Op      Op
	TypeURL string // e.g. resources.ClusterTypeURL
	Name    string // a resource the server has for the node (Restore: had)
}

// Config says which management server to check and how.
type Config struct {
	// Server is the management server's gRPC address, HOST:PORT, reached
	// with insecure (plaintext) credentials. Exactly one of Server and
	// Transport is needed for the gRPC variants.
	Server string

	// Transport reaches the management server instead of Server: for
	// credentials, a transport built from a bootstrap server entry
	// (grpctransport.NewBuilder(…).Dial(&cfg.Servers[0], transport.BuildOptions{})); for an
	// in-process server, its in-memory transport. The kit opens streams
	// with NewStream (transport.ADSMethod, transport.DeltaADSMethod and the
	// per-type methods) and does not close it.
	Transport transport.Transport

	// REST is the base URL of the server's REST-JSON endpoints
	// (http://HOST:PORT); "" leaves the REST variant out.
	REST string
	// HTTPClient makes the REST-JSON polls; nil means a client of its own
	// without a timeout (each poll is bounded by Timeout or Quiet).
	HTTPClient *http.Client

	// Node is sent in the first request of every stream and in every
	// REST-JSON poll; nil means a node with ID DefaultNodeID.
	Node *v3corepb.Node

	// Listeners, Routes, Clusters and Endpoints name resources the server
	// has for the node, for the checks to work with. A type left empty is
	// discovered: Listeners and Clusters through a wildcard subscription,
	// RouteConfigurations from the Listeners' HttpConnectionManagers and
	// ClusterLoadAssignments from the EDS Clusters. The names given are
	// used even when a wildcard finds none.
	Listeners, Routes, Clusters, Endpoints []string

	// Variants are the variants to check, in any order; nil means SotW and
	// Delta, plus REST when REST is set. A variant whose gRPC service the
	// server does not implement has its checks skipped.
	Variants []Variant

	// Checks, when not empty, runs only the checks of these names (see
	// Catalog). The checks of responses (response_nonce and the others)
	// look at the responses of the checks run.
	Checks []string

	// Change, when set, makes the server change a resource and returns
	// once the change is made (the server may still be sending it). The
	// kit calls it from one goroutine, with no other check running, for
	// resources it discovered; an error fails the check that asked.
	// Without it the checks of updates and deletions are skipped.
	Change func(ctx context.Context, c Change) error

	// Timeout is how long the kit waits for a response the server must
	// send; zero means DefaultTimeout.
	Timeout time.Duration
	// Quiet is how long the kit waits to conclude that the server sends
	// nothing (an ACK answered, a stale request answered); zero means
	// DefaultQuiet. It must exceed the server's usual response time.
	Quiet time.Duration

	// MaxResponseBytes is the largest response the server may send
	// zero means DefaultMaxResponseBytes. A transport of Server
	// is built with this receive limit.
	MaxResponseBytes int
}

// withDefaults returns cfg with its defaults filled in, or an error for a
// Config that cannot be run.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Timeout < 0 || cfg.Quiet < 0 || cfg.MaxResponseBytes < 0 {
		return cfg, errors.New("conformance: Timeout, Quiet and MaxResponseBytes must not be negative")
	}
	if cfg.Server != "" && cfg.Transport != nil {
		return cfg, errors.New("conformance: Server and Transport exclude each other")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Quiet == 0 {
		cfg.Quiet = DefaultQuiet
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.Node == nil {
		cfg.Node = &v3corepb.Node{Id: DefaultNodeID}
	}
	if cfg.Variants == nil {
		cfg.Variants = []Variant{SotW, Delta}
		if cfg.REST != "" {
			cfg.Variants = append(cfg.Variants, REST)
		}
	}
	grpcWanted := false
	for _, v := range cfg.Variants {
		if !slices.Contains(Variants(), v) {
			return cfg, fmt.Errorf("conformance: unknown variant %q", v)
		}
		grpcWanted = grpcWanted || v.grpc()
	}
	if grpcWanted && cfg.Server == "" && cfg.Transport == nil {
		return cfg, errors.New("conformance: a gRPC variant needs Server or Transport")
	}
	if slices.Contains(cfg.Variants, REST) && cfg.REST == "" {
		return cfg, errors.New("conformance: the REST variant needs REST")
	}
	cfg.REST = strings.TrimRight(cfg.REST, "/")
	for _, name := range cfg.Checks {
		if lookup(name) == nil {
			return cfg, fmt.Errorf("conformance: unknown check %q", name)
		}
	}
	return cfg, nil
}
