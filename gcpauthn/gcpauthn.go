// SPDX-License-Identifier: Apache-2.0

package gcpauthn

import (
	"container/list"
	"context"
	"errors"
	"sync"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/google"
)

// Authenticator gives the call credentials of the GCP authentication
// filters of a channel's configurations. It is safe for concurrent use.
// Close cancels the token fetches in progress.
type Authenticator struct {
	ctx    context.Context // of the token fetches
	cancel context.CancelFunc

	mu     sync.Mutex
	caches map[string]*lru // by filter instance name
}

// New returns an Authenticator.
func New() *Authenticator {
	ctx, cancel := context.WithCancel(context.Background())
	return &Authenticator{ctx: ctx, cancel: cancel, caches: make(map[string]*lru)}
}

// Close cancels the token fetches in progress; credentials given out
// afterwards fail their RPCs. It is idempotent.
func (a *Authenticator) Close() { a.cancel() }

// CallCredentials returns the call credentials of audience for the filter
// instance named filter, whose cache holds at most cacheSize credentials
// (cache_config.cache_size, gRFC A83): the cached ones, else new ones,
// which evict the least recently used when the cache is full. A new
// cacheSize applies at once, evicting the least recently used beyond it.
// It returns an error for an empty audience or a cacheSize of 0.
func (a *Authenticator) CallCredentials(filter string, cacheSize uint64, audience string) (credentials.PerRPCCredentials, error) {
	if cacheSize == 0 {
		return nil, errors.New("gcpauthn: cache size 0")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.caches[filter]
	if c == nil {
		c = &lru{order: list.New(), byAudience: make(map[string]*list.Element)}
		a.caches[filter] = c
	}
	c.resize(cacheSize)
	if e, ok := c.byAudience[audience]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry).creds, nil
	}
	creds, err := google.NewServiceAccountIdentityCredentials(a.ctx, audience)
	if err != nil {
		return nil, err
	}
	c.byAudience[audience] = c.order.PushFront(&entry{audience: audience, creds: creds})
	c.resize(cacheSize)
	return creds, nil
}

// lru is the credentials cache of one filter instance: most recently used
// first.
type lru struct {
	order      *list.List // of *entry
	byAudience map[string]*list.Element
}

type entry struct {
	audience string
	creds    credentials.PerRPCCredentials
}

// resize evicts the least recently used entries beyond size.
func (c *lru) resize(size uint64) {
	for uint64(c.order.Len()) > size {
		e := c.order.Back()
		c.order.Remove(e)
		delete(c.byAudience, e.Value.(*entry).audience)
	}
}
