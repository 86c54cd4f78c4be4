// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"context"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
)

// Harness is one way of reaching a management server, as Run drives it: a
// transport (or a transport option of the client) and a server it can
// reach. Run calls its methods from the test's goroutines, several cells
// at once (each on a server of its own), so an implementation must be
// safe for concurrent use.
type Harness interface {
	// Features says what the transport supports. Run calls it once.
	Features() Features

	// NewServer starts a management server (or a source of resources, for
	// a transport that has no server) holding no resources, for one cell,
	// and stops it when t ends (t.Cleanup). It fails t (t.Fatal) when it
	// cannot start one.
	NewServer(t *testing.T) Server
}

// Features is what a transport supports, as Run needs to know it.
type Features struct {
	// Delta reports that the client speaks incremental (delta) xDS over
	// the transport: deletion is explicit for every type, and the
	// legacy wildcard is a first request that subscribes nothing.
	// Otherwise the client speaks SotW: a response that leaves out a
	// Listener or Cluster deletes it, and the legacy wildcard is
	// an empty resource_names.
	Delta bool

	// Unsupported names the cells that the transport (or its server)
	// cannot support, each with the reason, which Run gives to t.Skip:
	// keys are a cell (a Cell… constant) or a cell for one type
	// ("Wildcard/RouteConfiguration"). For CellNACK the reason means that
	// the server cannot see NACKs (a file source): the cell checks the
	// client's side and skips the check of error_detail.
	Unsupported map[string]string
}

// Server is one management server of a Harness, serving one cell.
type Server interface {
	// NewClient returns a new client of the server, closed when t ends
	// (t.Cleanup), made with client.New from a bootstrap whose only
	// management server is this one and with o.Options followed by the
	// harness's own options (its transport builder, client.WithDelta for
	// a delta harness). When o.MaxResponseBytes > 0, the client must fail
	// the stream (or poll) that receives a response larger than that,
	// as client.WithMaxRecvMsgSize does for gRPC. A cell may make several
	// clients of one server.
	NewClient(t *testing.T, o ClientOptions) *client.Client

	// SetResources makes r the resources the server serves to every
	// client, replacing the previous ones, as one new version: every
	// response built from it carries r.Version as version_info (SotW) or
	// system_version_info (delta). Run gives every call a new Version. The
	// server pushes the change to its clients as it would push a new
	// snapshot (or, for a source, as its files change). r may name a
	// resource twice (CellDuplicateNames); a server that cannot serve that
	// lists CellDuplicateNames in Features.Unsupported.
	SetResources(t *testing.T, r testutil.Resources)

	// Break ends every open stream (or the polling of every client, or
	// the source's stream) the way a server restart would, so that each
	// client opens a new one and asks for its whole subscription again.
	// It returns at once; the clients reconnect on their own schedule.
	Break(t *testing.T)

	// Requests returns the log of the requests the server received, or
	// nil when the server cannot tell (a file source). Run checks through
	// it what reaches the server: NACKs and their error_detail, the form
	// of the wildcard, and the subscription replayed after Break.
	Requests() RequestLog
}

// ClientOptions configures Server.NewClient.
type ClientOptions struct {
	// Options are Run's client options, for example
	// client.WithWatchExpiryTimeout. The harness adds its own after them.
	Options []client.Option

	// MaxResponseBytes, when positive, is the size of the largest response
	// the client must accept, in bytes; zero keeps the transport's
	// default. Run uses it for CellOversize.
	MaxResponseBytes int
}

// RequestLog is the requests a server received, as
// testutil.ManagementServer records them (which implements it): in
// arrival order, Req set for a SotW request or a REST-JSON poll, Delta for
// a delta request, StreamID identifying the stream (per type for per-type
// streams, 0 for REST-JSON polls, which have no stream).
type RequestLog interface {
	// Requests returns every request received so far, in arrival order.
	Requests() []*testutil.Request

	// WaitForRequest consumes requests in arrival order, waiting for new
	// ones, until match returns true, and returns that request; the ones
	// that did not match are consumed too (as
	// testutil.ManagementServer.WaitForRequest). It returns an error
	// wrapping ctx.Err() if ctx ends first.
	WaitForRequest(ctx context.Context, match func(*testutil.Request) bool) (*testutil.Request, error)
}
