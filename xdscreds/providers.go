// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/credentials/tls/certprovider"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
)

// ProviderPlugin is a certificate provider plugin (gRFC A29): it makes the
// providers of the bootstrap's certificate_providers instances whose
// plugin_name is its Name. The "file_watcher" plugin is built in; others
// are given to NewProviderStore with WithProviderPlugins (there is no
// global registry). Implementations must be safe for concurrent use.
type ProviderPlugin interface {
	// Name returns the plugin_name the plugin serves, for example
	// "file_watcher".
	Name() string
	// ParseConfig checks the `config` of one instance (its raw JSON,
	// compacted; nil when absent or null) and returns what starts its
	// providers. NewProviderStore calls it once per instance of the
	// plugin; an error, which should name the field at fault, makes every
	// use of the instance fail with it.
	ParseConfig(config json.RawMessage) (ProviderConfig, error)
}

// ProviderConfig is the parsed config of one certificate provider
// instance. Implementations must be safe for concurrent use.
type ProviderConfig interface {
	// Build starts a provider of the instance: opts say which certificate
	// name (from the Cluster's CertificateProviderPluginInstance) and
	// whether root certificates, an identity certificate or both are
	// wanted. The store calls it when the first user of (instance, opts)
	// comes and calls the provider's Close when the last one goes;
	// KeyMaterial is called at every handshake, and should wait, until
	// its context is done, while it has no key material yet.
	Build(opts certprovider.BuildOptions) (certprovider.Provider, error)
}

// StoreOption configures NewProviderStore.
type StoreOption func(*storeOptions)

type storeOptions struct {
	plugins map[string]ProviderPlugin // by Name
	logger  *slog.Logger
}

// WithProviderPlugins adds certificate provider plugins to the store,
// besides the built-in "file_watcher"; a plugin named "file_watcher"
// replaces the built-in one, and of two plugins with one name the last
// wins. It is how plugins of your own are plugged in, with no global
// registry: give the same store to every resolver.Builder (and, later,
// xDS server) that should use them (xdsresolver.WithCertificateProviders).
func WithProviderPlugins(plugins ...ProviderPlugin) StoreOption {
	return func(o *storeOptions) {
		for _, p := range plugins {
			if p != nil {
				o.plugins[p.Name()] = p
			}
		}
	}
}

// WithStoreLogger sets the logger of the store: providers started and
// stopped (Debug), instances whose config is invalid or whose plugin is
// unknown (Warn, when the store is made). The default is the client's
// logger for NewClientProviderStore, and discards everything for
// NewProviderStore.
func WithStoreLogger(l *slog.Logger) StoreOption {
	return func(o *storeOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// ProviderStore holds the certificate provider instances of a bootstrap
// (its certificate_providers, gRFC A29) and shares their running
// providers: every cluster and channel that names an instance with the
// same certificate name and wants uses one provider, started when the
// first of them needs it and stopped when the last lets it go. Make one
// per bootstrap and give it to everything that does xDS security with
// that bootstrap (xdsresolver.WithCertificateProviders); by default each
// resolver.Builder makes its own, whose instances its channels share.
//
// A ProviderStore is safe for concurrent use. It starts no goroutine of
// its own (the providers may: file_watcher has one per running provider)
// and needs no closing: it holds nothing once every provider it gave has
// been closed.
type ProviderStore struct {
	// Initialized at creation time and read-only afterwards.
	instances map[string]providerInstance // by instance name
	logger    *slog.Logger

	mu      sync.Mutex
	running map[providerKey]*sharedProvider // guarded by mu
}

// providerInstance is one certificate_providers entry, parsed.
type providerInstance struct {
	plugin string
	config ProviderConfig // nil when err is set
	err    error          // why the instance cannot be used
}

// providerKey identifies a running provider: instances are shared by name
// and by what is asked of them.
type providerKey struct {
	instance string
	opts     certprovider.BuildOptions
}

// sharedProvider is a running provider and its users.
type sharedProvider struct {
	p    certprovider.Provider
	refs int // guarded by ProviderStore.mu
}

// ErrUnknownInstance is wrapped by the errors of Provider and Check for an
// instance name that is not in the bootstrap's certificate_providers.
var ErrUnknownInstance = errors.New("certificate provider instance not in the bootstrap's certificate_providers")

// Client is what NewClientProviderStore reads of an xDS client:
// *client.Client implements it (package xdscreds does not import the
// client).
type Client interface {
	// BootstrapConfig returns the client's bootstrap, whose
	// certificate_providers the store holds.
	BootstrapConfig() *bootstrap.Config
	// Logger returns the client's logger, which the store logs with
	// unless WithStoreLogger says otherwise.
	Logger() *slog.Logger
}

// NewClientProviderStore returns the store of the certificate provider
// instances of c's bootstrap, logging with c's logger unless
// WithStoreLogger is given, as the resolver, the dependency manager and
// the server do by default; otherwise it is NewProviderStore. It is how a
// program that adds plugins (WithProviderPlugins) makes the store it
// gives to xdsresolver.WithCertificateProviders and
// server.WithCertificateProviders.
func NewClientProviderStore(c Client, opts ...StoreOption) *ProviderStore {
	return NewProviderStore(c.BootstrapConfig().CertificateProviders, append([]StoreOption{WithStoreLogger(c.Logger())}, opts...)...)
}

// NewProviderStore returns a store of the certificate provider instances
// providers (bootstrap.Config.CertificateProviders: instance name → plugin
// name and config). Each instance's config is parsed at once by its
// plugin; an instance whose plugin is not known, or whose config is
// invalid, is kept with that error, which every use of it returns (the
// clusters that name it fail their RPCs with it). No provider is started
// before it is used. providers is not retained.
func NewProviderStore(providers map[string]bootstrap.CertificateProvider, opts ...StoreOption) *ProviderStore {
	o := storeOptions{plugins: map[string]ProviderPlugin{FileWatcherPluginName: fileWatcherPlugin{}}, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	s := &ProviderStore{instances: make(map[string]providerInstance, len(providers)), logger: o.logger, running: make(map[providerKey]*sharedProvider)}
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		cp := providers[name]
		inst := providerInstance{plugin: cp.PluginName}
		if plugin, ok := o.plugins[cp.PluginName]; !ok {
			inst.err = fmt.Errorf("certificate provider instance %q: unknown plugin_name %q (known: %q; add plugins with xdscreds.WithProviderPlugins)", name, cp.PluginName, slices.Sorted(maps.Keys(o.plugins)))
		} else if cfg, err := plugin.ParseConfig(cp.Config); err != nil {
			inst.err = fmt.Errorf("certificate provider instance %q (plugin %q): config: %w", name, cp.PluginName, err)
		} else {
			inst.config = cfg
		}
		if inst.err != nil {
			s.logger.Warn("certificate provider instance unusable", xdslog.KeyInstance, name, xdslog.KeyError, inst.err)
		}
		s.instances[name] = inst
	}
	return s
}

// InstanceNames returns the names of the store's instances, sorted, the
// unusable ones included.
func (s *ProviderStore) InstanceNames() []string {
	return slices.Sorted(maps.Keys(s.instances))
}

// Check returns nil if instance can be used: it is in the bootstrap, its
// plugin is known and its config valid. Otherwise it returns the error
// Provider would, which wraps ErrUnknownInstance for a name the bootstrap
// does not have.
func (s *ProviderStore) Check(instance string) error {
	inst, ok := s.instances[instance]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownInstance, instance)
	}
	return inst.err
}

// Provider returns a provider of instance for opts: the running one when
// another user has it, else one started now. Closing the returned
// provider releases it (once; later calls do nothing, and its KeyMaterial
// then fails); the running provider stops when its last user released it.
// Provider fails when Check does, or when the plugin cannot start the
// provider; the error names the instance.
func (s *ProviderStore) Provider(instance string, opts certprovider.BuildOptions) (certprovider.Provider, error) {
	if err := s.Check(instance); err != nil {
		return nil, err
	}
	key := providerKey{instance: instance, opts: opts}
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.running[key]
	if sp == nil {
		p, err := s.instances[instance].config.Build(opts)
		if err != nil {
			return nil, fmt.Errorf("certificate provider instance %q (plugin %q): %w", instance, s.instances[instance].plugin, err)
		}
		sp = &sharedProvider{p: p}
		s.running[key] = sp
		s.logger.Debug("certificate provider started", xdslog.KeyInstance, instance, xdslog.KeyCertificateName, opts.CertName, xdslog.KeyRoot, opts.WantRoot, xdslog.KeyIdentity, opts.WantIdentity)
	}
	sp.refs++
	return &providerRef{s: s, key: key, sp: sp}, nil
}

// release drops a user of sp; the last one stops it.
func (s *ProviderStore) release(key providerKey, sp *sharedProvider) {
	s.mu.Lock()
	sp.refs--
	last := sp.refs == 0
	if last {
		delete(s.running, key)
	}
	s.mu.Unlock()
	if last {
		// Outside mu: a provider's Close may wait for its goroutine.
		sp.p.Close()
		s.logger.Debug("certificate provider stopped", xdslog.KeyInstance, key.instance, xdslog.KeyCertificateName, key.opts.CertName)
	}
}

// errProviderReleased is returned by the KeyMaterial of a provider that
// was closed.
var errProviderReleased = errors.New("certificate provider closed")

// providerRef is one user's handle on a shared provider.
type providerRef struct {
	// Initialized at creation time and read-only afterwards.
	s   *ProviderStore
	key providerKey
	sp  *sharedProvider

	closed atomic.Bool // set by the first Close
}

// KeyMaterial returns the shared provider's current key material.
func (r *providerRef) KeyMaterial(ctx context.Context) (*certprovider.KeyMaterial, error) {
	if r.closed.Load() {
		return nil, errProviderReleased
	}
	return r.sp.p.KeyMaterial(ctx)
}

// Close releases the shared provider; it is idempotent.
func (r *providerRef) Close() {
	if r.closed.CompareAndSwap(false, true) {
		r.s.release(r.key, r.sp)
	}
}
