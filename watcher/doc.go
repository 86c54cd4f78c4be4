// SPDX-License-Identifier: Apache-2.0

// Package watcher defines how the xDS client and the dependency manager
// deliver resources to application code: the Watcher interface of gRFC
// A88, with a done func on every call, and an adapter that makes it easy
// to implement. A Watcher[T] receives the resources of a client watch
// (client.Watch, T a decoded resource type such as *resources.Listener);
// a Watcher[*depmgr.XDSConfig] receives the complete configurations of a
// dependency manager (depmgr.New).
//
// # Delivery contract
//
// Both deliverers follow the same rules. A Watcher's methods are called
// serially, on a goroutine the deliverer owns, never from the goroutine
// that started the watch. A method may call back into the deliverer (start
// or cancel watches; on a depmgr.Manager, SubscribeToCluster and
// ResolveNow), but not close it. Each method receives a done func: it may
// be called from any goroutine, at any later time, including before the
// method returns; calling it more than once has no effect. What done
// holds back differs:
//
//   - Client watches: done is the flow control of the management server
//     stream. For one client, all methods of all watches are called in the
//     order the management server's responses were received (within one
//     response: in response order, and deletions after updates). The
//     client reads no further response from the stream that produced a
//     call until done has been called by every watcher notified of that
//     response (xDS flow control, R-12.1). A watcher that never calls done
//     stalls its stream, and so every other watch on it.
//   - Dependency manager: done paces the deliveries of snapshots. The
//     Manager makes its next call only after done of the previous one;
//     meanwhile newer snapshots replace the one waiting (they coalesce), so
//     a slow watcher gets the latest state and nothing queues up. The
//     Manager's own client watches release the client's flow control
//     without waiting for done: a watcher that holds it delays its own
//     snapshots, never the client's streams. See the depmgr package doc,
//     "Delivery".
//
// Closing the deliverer (client.Client.Close, depmgr.Manager.Close) waits
// for a method in progress to return, but not for a done not called yet;
// no call is made after it, and done does nothing once it returned.
//
// # Errors
//
// ResourceError means the resource is unusable: it does not exist, it was
// deleted, or it was never received valid (so there is no previous value to
// keep); for a dependency manager, the whole configuration is unusable. The
// watcher should stop using any value it held. AmbientError means a problem
// (a NACKed update, a lost connection) that leaves the last value delivered
// by ResourceChanged valid; the watcher should keep using it. Errors wrap
// the client's sentinel errors (client.ErrResourceNotFound,
// client.ErrResourceInvalid, client.ErrConnection) or, from a dependency
// manager, its own (depmgr.ErrNoVirtualHost, ...); test with errors.Is.
//
// This package imports nothing else of the module.
package watcher
