// SPDX-License-Identifier: Apache-2.0

// Package watcher defines how the xDS client delivers resources to
// application code: the Watcher interface of gRFC A88, with a done func on
// every call for flow control, and adapters that make it easy to implement.
//
// # Delivery contract
//
// For one client, all Watcher methods of all watches are called serially, on
// a goroutine the client owns, in the order the management server's
// responses were received (within one response: in response order, and
// deletions after updates). A method may call back into the client (start
// or cancel watches).
//
// Each method receives a done func. The client reads no further response
// from the management server stream that produced the call until done has
// been called by every watcher notified of that response (xDS flow control,
// done may be called from any goroutine, at any later time; calling
// it more than once has no effect. A watcher that never calls done stalls
// its stream.
//
// # Errors
//
// ResourceError means the resource is unusable: it does not exist, it was
// deleted, or it was never received valid (so there is no previous value to
// keep). The watcher should stop using any value it held. AmbientError means
// a problem (a NACKed update, a lost connection) that leaves the last value
// delivered by ResourceChanged valid; the watcher should keep using it.
// Errors wrap the client's sentinel errors (client.ErrResourceNotFound,
// client.ErrResourceInvalid, client.ErrConnection); test with errors.Is.
//
// This package imports nothing else of the module.
package watcher
