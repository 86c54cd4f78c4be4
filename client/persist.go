// SPDX-License-Identifier: Apache-2.0

package client

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"

	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// This file implements last-known-good persistence: the client writes
// every resource value it accepts to a Store, and on start, when no
// management server of a resource's list answers within a time, serves
// the stored value, marked stale, until a server's first response
// replaces it.

// DefaultPersistenceTimeout is how long after New the client waits for a
// management server before serving persisted values: 10 s.
const DefaultPersistenceTimeout = 10 * time.Second

// PersistedResource is one resource value as a Store keeps it.
type PersistedResource struct {
	// ServerURI is the server_uri of the management server that sent it.
	ServerURI string
	// TypeURL and Name identify the resource (Name canonical).
	TypeURL, Name string
	// Version is its version: SotW version_info, or the delta resource
	// version.
	Version string
	// Resource is the resource as received, unwrapped.
	Resource *anypb.Any
	// Updated is when it was received.
	Updated time.Time
}

// Store keeps the last accepted value of resources across restarts of the
// process (WithStore, WithPersistence). The client calls Save and Delete
// from one goroutine of its own, never holding its lock, and Load once, in
// New. Implementations need not be safe for concurrent use by several
// clients.
type Store interface {
	// Save stores r, replacing any value of the same ServerURI, TypeURL
	// and Name. It must be atomic: after a crash, Load returns the old
	// value or the new one, never a mix. r is the store's to keep.
	Save(r PersistedResource) error
	// Delete forgets the value of that ServerURI, TypeURL and Name, if
	// any.
	Delete(serverURI, typeURL, name string) error
	// Load returns every stored value. Unreadable entries are skipped
	// (and reported, for example logged), not returned as an error; an
	// error means nothing could be read. The client keeps the returned
	// values, their Resource bytes included: the store must not modify
	// them afterwards.
	Load() ([]PersistedResource, error)
}

// WithPersistence makes the client keep the last accepted value of every
// resource in directory dir (created with mode 0o700 if needed), one file
// per management server, type URL and resource name, written atomically
// (temporary file, fsync, rename, fsync of the directory), and serve those
// values when no server can be reached on start; see WithStore. It is
// WithStore(DirStore(dir, WithDirStoreLogger(logger))) with the client's
// logger (WithLogger).
func WithPersistence(dir string) Option {
	return func(o *options) { o.store, o.persistDir = nil, dir }
}

// WithStore makes the client persist the values it accepts in s (see
// Store): each valid resource received (ACKed, or applied from a response
// NACKed for another resource, R-7.4) is saved, and deleted when the
// server deletes it, its TTL expires or fail_on_data_errors drops it. A
// value sent with a TTL is not saved (its saved copy is deleted):
// the TTL says it must not outlive contact with its server. The
// writes happen on a goroutine of the client, in order, the latest value
// of a resource replacing one not written yet; Close writes what is
// pending before returning.
//
// On start (New), the stored values are loaded. A watched resource that
// has no value timeout after New (WithPersistenceTimeout; default
// DefaultPersistenceTimeout, 10 s), whose server list has not answered
// since New, and that has a stored value from a server of its list (the
// one of highest priority if several), is served that value: its watchers
// get it through ResourceChanged, then an AmbientError wrapping ErrStale;
// Dump shows it ACKED with an error_state saying it is stale, and
// ResourceOrigin reports Stale. The first value a server sends replaces it
// and is delivered even when equal. A stored value is never sent to a
// server in delta's initial_resource_versions.
func WithStore(s Store) Option {
	return func(o *options) { o.store, o.persistDir = s, "" }
}

// WithPersistenceTimeout sets how long after New the client waits for a
// management server before serving persisted values (WithStore). Zero or
// negative means DefaultPersistenceTimeout.
func WithPersistenceTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.persistTimeout = d
		}
	}
}

// persistKey identifies a stored value.
type persistKey struct{ server, typeURL, name string }

// persister is the client's side of the Store: the values loaded on start
// and the writes not done yet. Its fields are guarded by Client.mu, except
// store and loaded, which are read-only once New returns.
type persister struct {
	store   Store
	loaded  map[persistKey]loadedResource // by key, from Load
	ready   bool                          // the persistence timeout passed
	pending map[persistKey]*PersistedResource
	order   []persistKey  // pending keys in order of first queueing
	wake    chan struct{} // cap 1: wakes the writer
	timer   *time.Timer
}

// loadedResource is a stored value, decoded.
type loadedResource struct {
	rec   PersistedResource
	value any
}

// input returns what serving l brings to an entry (evPersisted).
func (l loadedResource) input() *input {
	origin := l.rec.ServerURI
	return &input{value: l.value, raw: l.rec.Resource.GetValue(), version: l.rec.Version, now: l.rec.Updated, origin: &origin}
}

// startPersistence loads the store, decodes what it holds, and starts the
// writer and the timeout. It runs in New, without the client's lock: the
// decoders never run under it. A stored value of a type the client does
// not know, that no longer validates, or whose resource is named otherwise
// than the name it is stored under, is skipped with a warning.
func (c *Client) startPersistence() {
	s := c.opts.store
	if s == nil && c.opts.persistDir != "" {
		s = DirStore(c.opts.persistDir, WithDirStoreLogger(c.logger))
	}
	if s == nil {
		return
	}
	p := &persister{store: s, loaded: make(map[persistKey]loadedResource), pending: make(map[persistKey]*PersistedResource), wake: make(chan struct{}, 1)}
	recs, err := s.Load()
	if err != nil {
		c.logger.Warn("cannot load persisted resources", xdslog.KeyError, err)
	}
	for _, r := range recs {
		v, err := c.decodeStored(r)
		if err != nil {
			c.logger.Warn("ignoring a persisted resource", xdslog.KeyTypeURL, r.TypeURL, xdslog.KeyResource, r.Name, xdslog.KeyServerURI, r.ServerURI, xdslog.KeyError, err)
			continue
		}
		p.loaded[persistKey{r.ServerURI, r.TypeURL, r.Name}] = loadedResource{rec: r, value: v}
	}
	c.persist = p
	d := c.opts.persistTimeout
	if d <= 0 {
		d = DefaultPersistenceTimeout
	}
	p.timer = time.AfterFunc(d, c.persistenceTimeout)
	c.wg.Add(1)
	go c.persistWriter()
}

// persistenceTimeout serves the stored values to the watched resources
// that still have none.
func (c *Client) persistenceTimeout() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.persist.ready = true
	for _, t := range c.registry.Types() {
		for _, e := range c.sortedEntriesLocked(t.TypeURL()) {
			c.servePersistedLocked(e)
		}
	}
	for _, a := range c.auths {
		for _, t := range c.registry.Types() {
			c.servePersistedCollectionLocked(a, t)
		}
	}
}

// servePersistedCollectionLocked serves the WatchAll and glob collection
// watchers of typ of a, when the persistence timeout passed and a has not
// answered, the stored values they hold that no entry has: each becomes
// an entry of the collection with its stale value, as a watched name's
// does (servePersistedLocked), in name order. Of a name stored from
// several servers of a's list, the highest-priority one's.
func (c *Client) servePersistedCollectionLocked(a *authority, typ resources.ResourceType) {
	p := c.persist
	url := typ.TypeURL()
	if p == nil || !p.ready || a.reached || !a.hasCollectionsLocked(url) {
		return
	}
	best := make(map[string]loadedResource)
	rank := make(map[string]int)
	for k, l := range p.loaded {
		if k.typeURL != url || a.entryLocked(url, k.name) != nil || !a.wantsLocked(url, k.name) || c.knownAuthorityLocked(k.name) != a {
			continue
		}
		i := slices.IndexFunc(a.servers, func(sc *bootstrap.ServerConfig) bool { return sc.ServerURI == k.server })
		if i < 0 {
			continue
		}
		if r, ok := rank[k.name]; !ok || i < r {
			best[k.name], rank[k.name] = l, i
		}
	}
	for _, name := range sortedKeys(best) {
		l := best[name]
		e := a.newEntryLocked(a.typeLocked(typ), name)
		c.logger.Warn("no management server reachable: serving the persisted value to a collection", xdslog.KeyTypeURL, url,
			xdslog.KeyResource, name, xdslog.KeyVersionInfo, l.rec.Version, xdslog.KeyServerURI, l.rec.ServerURI)
		c.stepLocked(e, evPersisted, l.input(), nil)
	}
}

// decodeStored decodes a stored value, and checks that the resource is
// the one it is stored as.
func (c *Client) decodeStored(r PersistedResource) (any, error) {
	typ, ok := c.registry.Lookup(r.TypeURL)
	if !ok {
		return nil, errors.New("type not registered with the client")
	}
	name, v, err := typ.Decode(r.Resource)
	if err != nil {
		return nil, err
	}
	if name = resources.CanonicalName(name); name != r.Name {
		return nil, fmt.Errorf("the stored resource is named %q, not %q", name, r.Name)
	}
	return v, nil
}

// servePersistedLocked serves e its stored value if the persistence
// timeout passed, e has no value and was never received, its authority
// has not answered, and a server of its list sent the stored value (the
// one of highest priority, if several did).
func (c *Client) servePersistedLocked(e *entry) {
	p := c.persist
	if p == nil || !p.ready || e.auth.reached || !e.neverReceived() {
		return
	}
	for _, sc := range e.auth.servers {
		if l, ok := p.loaded[persistKey{sc.ServerURI, e.typ.TypeURL(), e.name}]; ok {
			c.logger.Warn("no management server reachable: serving the persisted value", xdslog.KeyTypeURL, e.typ.TypeURL(),
				xdslog.KeyResource, e.name, xdslog.KeyVersionInfo, l.rec.Version, xdslog.KeyServerURI, l.rec.ServerURI)
			c.stepLocked(e, evPersisted, l.input(), nil)
			return
		}
	}
}

// staleError is the AmbientError of a resource served from persistence.
func (c *Client) staleError(e *entry) error {
	return c.resourceError(e.typ, e.name, fmt.Errorf("%w: version %q from %s, received %v", ErrStale, e.version, e.fromURI(), e.updated().UTC().Format(time.RFC3339)))
}

// persistLocked queues the write of e's value, or of its deletion when it
// has none. A value with a TTL is not stored, and its stored copy is
// deleted: its server wants it gone when the server cannot be reached,
// which is when a stored value would be served. A value served from
// persistence is not written back.
func (c *Client) persistLocked(e *entry) {
	p := c.persist
	if p == nil || e.stale() || e.from == nil {
		return
	}
	k := persistKey{*e.from, e.typ.TypeURL(), e.name}
	var r *PersistedResource
	if e.value != nil && e.ext().ttl == nil {
		r = &PersistedResource{ServerURI: k.server, TypeURL: k.typeURL, Name: e.name, Version: e.version, Resource: &anypb.Any{TypeUrl: k.typeURL, Value: []byte(e.raw)}, Updated: e.updated()}
	}
	if _, ok := p.pending[k]; !ok {
		p.order = append(p.order, k)
	}
	p.pending[k] = r
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// persistWriter writes the queued values until the client is closed, then
// writes what is left.
func (c *Client) persistWriter() {
	defer c.wg.Done()
	p := c.persist
	for {
		select {
		case <-p.wake:
		case <-c.ctx.Done():
			c.flushPersisted()
			return
		}
		c.flushPersisted()
	}
}

// flushPersisted writes every queued value.
func (c *Client) flushPersisted() {
	p := c.persist
	for {
		c.mu.Lock()
		if len(p.order) == 0 {
			c.mu.Unlock()
			return
		}
		k := p.order[0]
		p.order = p.order[1:]
		r := p.pending[k]
		delete(p.pending, k)
		c.mu.Unlock()
		var err error
		if r != nil {
			err = p.store.Save(*r)
		} else {
			err = p.store.Delete(k.server, k.typeURL, k.name)
		}
		if err != nil {
			c.logger.Warn("cannot persist resource", xdslog.KeyTypeURL, k.typeURL, xdslog.KeyResource, k.name, xdslog.KeyError, err)
		}
	}
}

// DirStore returns a Store that keeps each value in a file of dir, named
// by a hash of its server, type URL and name, with suffix ".xds". A file
// holds a 4-byte magic "XDS1", the CRC-32C of the rest, big-endian, and a
// serialized envoy.service.status.v3.ClientConfig whose client_scope is the
// server URI and whose one generic_xds_configs entry holds type URL, name,
// version, resource and last_updated. Save writes a temporary file in dir,
// fsyncs it, renames it over the old one and fsyncs dir, so that a crash
// leaves the old file or the new one. Load skips, with a warning on
// logger (nil: discarded), files that are truncated, corrupt or
// undecodable, and temporary files left by a crash; it warns too when dir
// is writable by its group or by everyone (mode & 0o022), since whoever
// can write there can make the client serve their resources. dir is
// created with mode 0o700 on the first Save. The logger of the warnings
// is WithDirStoreLogger's; by default they are discarded.
func DirStore(dir string, opts ...DirStoreOption) Store {
	o := dirStoreOptions{logger: xdslog.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	return &dirStore{dir: dir, logger: o.logger}
}

// DirStoreOption configures a DirStore.
type DirStoreOption func(*dirStoreOptions)

type dirStoreOptions struct {
	logger *slog.Logger
}

// WithDirStoreLogger sets the logger of a DirStore's warnings (files it
// skips, a directory others can write); nil keeps the default, which
// discards them. WithPersistence gives its DirStore the client's logger.
func WithDirStoreLogger(l *slog.Logger) DirStoreOption {
	return func(o *dirStoreOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

type dirStore struct {
	dir    string
	logger *slog.Logger
	mu     sync.Mutex // serializes Save and Delete
}

const (
	persistMagic  = "XDS1"
	persistSuffix = ".xds"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

func (s *dirStore) path(server, typeURL, name string) string {
	h := sha256.Sum256([]byte(server + "\x00" + typeURL + "\x00" + name))
	return filepath.Join(s.dir, hex.EncodeToString(h[:16])+persistSuffix)
}

func (s *dirStore) Save(r PersistedResource) error {
	cc := &v3statuspb.ClientConfig{
		ClientScope: r.ServerURI,
		GenericXdsConfigs: []*v3statuspb.ClientConfig_GenericXdsConfig{{
			TypeUrl:     r.TypeURL,
			Name:        r.Name,
			VersionInfo: r.Version,
			XdsConfig:   r.Resource,
			LastUpdated: timestamppb.New(r.Updated),
		}},
	}
	payload, err := proto.Marshal(cc)
	if err != nil {
		return fmt.Errorf("persisting %s %q: %w", r.TypeURL, r.Name, err)
	}
	b := make([]byte, 8, 8+len(payload))
	copy(b, persistMagic)
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(payload, crc32c))
	b = append(b, payload...)

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("persisting %s %q: %w", r.TypeURL, r.Name, err)
	}
	final := s.path(r.ServerURI, r.TypeURL, r.Name)
	if err := writeFileAtomic(s.dir, final, b); err != nil {
		return fmt.Errorf("persisting %s %q: %w", r.TypeURL, r.Name, err)
	}
	return nil
}

// writeFileAtomic writes b to final through a temporary file of dir:
// write, fsync, close, rename, fsync dir.
func writeFileAtomic(dir, final string, b []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *dirStore) Delete(server, typeURL, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(s.path(server, typeURL, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (s *dirStore) Load() ([]PersistedResource, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.checkMode()
	var out []PersistedResource
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if strings.HasPrefix(name, ".tmp-") {
			s.logger.Warn("ignoring a persisted file left by an interrupted write", xdslog.KeyFile, name)
			continue
		}
		if !strings.HasSuffix(name, persistSuffix) {
			continue
		}
		r, err := s.read(filepath.Join(s.dir, name))
		if err != nil {
			s.logger.Warn("ignoring an unreadable persisted resource", xdslog.KeyFile, name, xdslog.KeyError, err)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// checkMode warns when dir is writable by its group or by everyone (the
// sticky bit does not help: others may still add files): whoever can
// write there can plant resources that the client serves.
func (s *dirStore) checkMode() {
	fi, err := os.Stat(s.dir)
	if err != nil || fi.Mode().Perm()&0o022 == 0 {
		return
	}
	s.logger.Warn("the persistence directory is writable by its group or by everyone: anyone who can write there can make the client serve their resources; make it 0o700",
		xdslog.KeyDir, s.dir, xdslog.KeyMode, fi.Mode().String())
}

// read reads and checks one file.
func (s *dirStore) read(path string) (PersistedResource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PersistedResource{}, err
	}
	if len(b) < 8 || string(b[:4]) != persistMagic {
		return PersistedResource{}, errors.New("truncated or not a persisted resource")
	}
	payload := b[8:]
	if crc32.Checksum(payload, crc32c) != binary.BigEndian.Uint32(b[4:8]) {
		return PersistedResource{}, errors.New("checksum mismatch: truncated or corrupt")
	}
	cc := &v3statuspb.ClientConfig{}
	if err := proto.Unmarshal(payload, cc); err != nil {
		return PersistedResource{}, err
	}
	if len(cc.GetGenericXdsConfigs()) != 1 || cc.GetGenericXdsConfigs()[0].GetXdsConfig() == nil {
		return PersistedResource{}, errors.New("no resource inside")
	}
	g := cc.GetGenericXdsConfigs()[0]
	r := PersistedResource{ServerURI: cc.GetClientScope(), TypeURL: g.GetTypeUrl(), Name: g.GetName(), Version: g.GetVersionInfo(),
		Resource: g.GetXdsConfig(), Updated: g.GetLastUpdated().AsTime()}
	if path != s.path(r.ServerURI, r.TypeURL, r.Name) {
		return PersistedResource{}, errors.New("file name does not match its content")
	}
	return r, nil
}
