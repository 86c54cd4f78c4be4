// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"log/slog"
	"strings"

	"google.golang.org/grpc/credentials"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver/internal/router"
)

// DefaultScheme is the URI scheme of the targets a Builder resolves when
// WithScheme is not given: "xds", as in "xds:///name".
const DefaultScheme = "xds"

// Option configures a Builder.
type Option func(*options)

type options struct {
	scheme         string
	logger         *slog.Logger
	depmgrOpts     []depmgr.Option
	ringHashHeader string           // "" for none: a random hash
	timer          router.TimerFunc // the routers' timers; nil for time.AfterFunc
	lrsBuilder     transport.Builder
	holder         *channelHolder                   // set by DialOptions: the interceptors' configuration
	providers      *xdscreds.ProviderStore          // nil: NewBuilder makes one from the client's bootstrap
	fallback       credentials.TransportCredentials // DialOptions' fallback; nil: plaintext
	gcpAuthn       GCPAuthenticator                 // DialOptions' GCP authentication filter; nil: none
}

func defaultOptions() options {
	return options{scheme: DefaultScheme}
}

// WithScheme sets the URI scheme of the targets the Builder resolves, so
// that several Builders (for example on different clients) can serve one
// ClientConn, or so that the scheme does not clash with another "xds"
// resolver. The scheme is lowercased, as grpc lowercases the target's
// scheme before it looks for a resolver. "" means DefaultScheme.
func WithScheme(scheme string) Option {
	return func(o *options) {
		if scheme == "" {
			scheme = DefaultScheme
		}
		o.scheme = strings.ToLower(scheme)
	}
}

// WithLogger sets the logger of the resolvers the Builder builds, of their
// dependency managers and of the Builder's certificate providers. The
// default is the client's (client.Client.Logger), which discards
// everything unless the client was given one. Warnings about
// configuration a channel does not apply (logged once per channel) go
// there too. Ambient
// errors and errors reported to the channel are logged at Warn, every
// State pushed to the channel at Debug. A depmgr.WithLogger given to
// WithDepMgrOptions takes precedence for the dependency manager.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithDepMgrOptions adds options for the dependency manager (package
// depmgr) each resolver starts, for example depmgr.WithDNSResolver for the
// hosts of LOGICAL_DNS clusters. They are applied after the resolver's
// own, which set the data-plane authority (see the package doc, "Targets")
// and the logger; so a depmgr.WithDataPlaneAuthority given here replaces
// the target's for every resolver of the Builder.
func WithDepMgrOptions(opts ...depmgr.Option) Option {
	return func(o *options) {
		o.depmgrOpts = append(o.depmgrOpts, opts...)
	}
}

// WithRingHashRequestHashHeader sets the header whose value is hashed to
// pick an endpoint of a cluster whose load balancing policy is RING_HASH
// when the route has no hash policy (gRFC A76, ring_hash's
// requestHashHeader). RPCs that do not carry the header get a random hash.
// Without this option every RPC gets a random hash. The header name must
// be a valid gRPC metadata key that does not end in "-bin"; it is
// lowercased. Build fails if it is invalid. See the package doc, "What is
// honoured".
func WithRingHashRequestHashHeader(name string) Option {
	return func(o *options) {
		o.ringHashHeader = strings.ToLower(name)
	}
}

// WithLoadReportTransport sets how the resolvers reach the management
// server to report load (LRS, R-22) for clusters whose lrs_server is
// "self": b builds a transport to the bootstrap's server of the cluster.
// The default is the client's own (client.Client.TransportBuilder), so
// that load is reported on the client's ADS connection to that server,
// as says (with the default grpctransport builder, or any builder
// that shares connections); give another to report on a connection of
// its own. The channels of the Builder report their load together,
// on one LRS stream per management server, opened when a configuration
// first has such a cluster and closed, after a final report, when the
// last of them is closed. See package lrs.
func WithLoadReportTransport(b transport.Builder) Option {
	return func(o *options) { o.lrsBuilder = b }
}

// WithCertificateProviders sets the store of certificate provider
// instances (gRFC A29) whose providers the channels of the Builder use
// for the clusters with a transport socket; see package xdscreds. The
// default is a store of the client's bootstrap (its certificate_providers)
// with the built-in file_watcher plugin only, made by NewBuilder and
// shared by the Builder's channels only: DialOptions makes a Builder per
// call, so channels made with several DialOptions calls run a provider
// each unless they are given one store. Give your own to add plugins
// (xdscreds.WithProviderPlugins), or to share running providers with
// other Builders (and, later, xDS servers). The store must have been made from the same bootstrap
// as the client: the client checks the names a Cluster uses against the
// bootstrap, the store runs them.
func WithCertificateProviders(s *xdscreds.ProviderStore) Option {
	return func(o *options) { o.providers = s }
}

// WithFallbackCredentials sets the credentials DialOptions uses for the
// endpoints of clusters without xDS security (no transport_socket), and
// for addresses that carry no xDS security configuration (gRFC A29,
// xdscreds.ClientOptions.FallbackCreds). The default is plaintext
// (insecure.NewCredentials()), as Envoy connects to an upstream without
// transport_socket; give TLS credentials of your own to refuse plaintext.
// NewBuilder ignores it: its channels' credentials are the application's.
func WithFallbackCredentials(creds credentials.TransportCredentials) Option {
	return func(o *options) { o.fallback = creds }
}

// GCPAuthenticator gives the call credentials of the GCP authentication
// filter (gRFC A83): for the filter instance named filter (an HTTP filter
// of the Listener, whose cache holds at most cacheSize credentials), those
// of audience, the cluster's (its metadata). Package
// github.com/proxyless/xds/gcpauthn's Authenticator is one: ID tokens of
// the GCE metadata server. It must be safe for concurrent use.
type GCPAuthenticator interface {
	CallCredentials(filter string, cacheSize uint64, audience string) (credentials.PerRPCCredentials, error)
}

// WithGCPAuthentication runs the GCP authentication filter (gRFC A83) of
// the channels of DialOptions with a: an RPC routed to a cluster whose
// metadata has an audience for one of the Listener's GCP authentication
// filters gets a's call credentials for it (an "authorization: Bearer"
// header with gcpauthn's; only over connections with transport
// security). It is in a package of its own so that programs that do not
// use the filter do not link its credentials:
//
//	import "github.com/proxyless/xds/gcpauthn"
//
//	auth := gcpauthn.New()
//	defer auth.Close() // after the channel
//	cc, err := grpc.NewClient("xds:///svc", xdsresolver.DialOptions(c, xdsresolver.WithGCPAuthentication(auth))...)
//
// Without it, such RPCs fail with UNAVAILABLE naming this option; channels
// of NewBuilder alone do not run the filter (a warning says so once).
func WithGCPAuthentication(a GCPAuthenticator) Option {
	return func(o *options) { o.gcpAuthn = a }
}
