// SPDX-License-Identifier: Apache-2.0

// Command grpc makes a newcomer's first RPCs through xDS: a gRPC channel
// for xds:///svc, made with the one call that gives it everything xDS
// configures, sends RPCs to the backends of the xdsctl demo. In two
// terminals:
//
//	go run ./cmd/xdsctl demo --bootstrap-out /tmp/b.json   # terminal 1
//	GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/grpc  # terminal 2
//
// It reads the bootstrap from the environment (GRPC_XDS_BOOTSTRAP, or
// GRPC_XDS_BOOTSTRAP_CONFIG), makes an xDS client and the channel
//
//	cc, err := grpc.NewClient("xds:///svc", xdsresolver.DialOptions(c)...)
//
// and makes --rpcs RPCs (default 20), one every --interval (default
// 250ms), alternately on the two routes of the demo's RouteConfiguration
// "route-svc":
//
//   - helloworld.Greeter/SayHello matches the prefix /helloworld.Greeter/,
//     whose RPCs are split 90/10 between the Clusters cluster-svc
//     (backend-1 to backend-4) and cluster-svc-canary (canary);
//   - grpc.testing.TestService/UnaryCall matches the prefix /, whose RPCs
//     all go to cluster-svc.
//
// For each RPC it prints the method, its route, the backend that
// answered (the demo's backends, xDS-enabled servers of the same
// management server, name themselves), its cluster and address, and
// whether the connection is plaintext or TLS; at the end, how many RPCs
// of each route each backend answered. Against "xdsctl demo --mtls" it
// works unchanged: the credentials of DialOptions do the TLS each Cluster
// asks for (plaintext for clusters without TLS), and it prints the
// SPIFFE ID each backend proved.
//
// It exits 0 when every RPC was answered; 1, with the reason, when the
// bootstrap is missing or unusable or an RPC fails (each has --timeout,
// default 10s); 2 on a bad flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	grpccreds "google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/xdsresolver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		os.Exit(2) // run printed the error and the usage
	case err != nil:
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line.
type usageError struct{ error }

// The demo's routes, as the example sends them: the split and the other.
const (
	// sayHello is helloworld.Greeter's method, matched by the route
	// prefix /helloworld.Greeter/: the 90/10 split.
	sayHello = "/helloworld.Greeter/SayHello"
	// canaryBackend is the backend of cluster-svc-canary; backend-1 to
	// backend-4 are those of cluster-svc.
	canaryBackend = "canary"
)

// route is one kind of RPC the example makes.
type route struct {
	method string // short name, for the output
	desc   string // the route of route-svc it takes
	call   func(ctx context.Context, cc *grpc.ClientConn, p *peer.Peer) (backend, detail string, err error)
}

var routes = []route{
	{method: "SayHello", desc: "route /helloworld.Greeter/ (90/10)", call: callSayHello},
	{method: "UnaryCall", desc: "route /", call: callUnaryCall},
}

// callSayHello calls helloworld.Greeter/SayHello. Its request and reply
// are one string field each, so wrapperspb.StringValue has their wire
// form; with grpc-go's examples module it is
// helloworld.NewGreeterClient(cc).SayHello. The demo's backends send
// their name in the header server-id.
func callSayHello(ctx context.Context, cc *grpc.ClientConn, p *peer.Peer) (string, string, error) {
	var hdr metadata.MD
	reply := new(wrapperspb.StringValue)
	if err := cc.Invoke(ctx, sayHello, wrapperspb.String("xDS"), reply, grpc.Header(&hdr), grpc.Peer(p)); err != nil {
		return "", "", err
	}
	backend := strings.Join(hdr.Get("server-id"), ",")
	return backend, fmt.Sprintf(": %q", reply.GetValue()), nil
}

// callUnaryCall calls grpc.testing.TestService/UnaryCall, which the
// demo's backends answer with their name.
func callUnaryCall(ctx context.Context, cc *grpc.ClientConn, p *peer.Peer) (string, string, error) {
	resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{FillServerId: true}, grpc.Peer(p))
	if err != nil {
		return "", "", err
	}
	return resp.GetServerId(), "", nil
}

// run parses args, makes the RPCs and prints each to out; it prints the
// usage to errOut when args are bad.
func run(ctx context.Context, out, errOut io.Writer, args []string) error {
	fs := flag.NewFlagSet("grpc", flag.ContinueOnError)
	fs.SetOutput(errOut)
	rpcs := fs.Int("rpcs", 20, "how many RPCs to make")
	interval := fs.Duration("interval", 250*time.Millisecond, "the pause between RPCs")
	timeout := fs.Duration("timeout", 10*time.Second, "the deadline of each RPC")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	bad := func(format string, args ...any) error {
		err := fmt.Errorf(format, args...)
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case *rpcs < 1:
		return bad("--rpcs must be at least 1, got %d", *rpcs)
	case *interval < 0:
		return bad("--interval must not be negative, got %v", *interval)
	case *timeout <= 0:
		return bad("--timeout must be positive, got %v", *timeout)
	}

	cfg, err := bootstrap.FromEnv()
	if errors.Is(err, bootstrap.ErrNoBootstrap) {
		return fmt.Errorf("%w: start the demo with \"go run ./cmd/xdsctl demo --bootstrap-out /tmp/b.json\", then set GRPC_XDS_BOOTSTRAP=/tmp/b.json", err)
	}
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close() // after cc.Close

	// The one call: the xds resolver, its interceptors, and credentials
	// that do the TLS each Cluster asks for.
	cc, err := grpc.NewClient("xds:///svc", xdsresolver.DialOptions(c)...)
	if err != nil {
		return err
	}
	defer cc.Close()
	fmt.Fprintf(out, "xds:///svc, through the management server %s as node %q:\n", cfg.Servers[0].ServerURI, cfg.Node.ID)

	answered := make([]map[string]int, len(routes)) // per route: backend → RPCs
	for i := range answered {
		answered[i] = map[string]int{}
	}
	var tick *time.Ticker
	if *interval > 0 {
		tick = time.NewTicker(*interval)
		defer tick.Stop()
	}
	for i := range *rpcs {
		if i > 0 && tick != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
		r := routes[i%len(routes)]
		var p peer.Peer
		rctx, cancel := context.WithTimeout(ctx, *timeout)
		backend, detail, err := r.call(rctx, cc, &p)
		cancel()
		if err != nil {
			return fmt.Errorf("RPC %d (%s): %w; is the demo of the bootstrap running?", i+1, r.method, err)
		}
		answered[i%len(routes)][backend]++
		fmt.Fprintf(out, "RPC %2d  %-9s  %-34s  -> %s of %s at %s, %s%s\n",
			i+1, r.method, r.desc, backend, cluster(backend), addr(&p), security(&p), detail)
	}

	for i, r := range routes {
		if len(answered[i]) == 0 {
			continue
		}
		perCluster := map[string][]string{}
		for _, b := range slices.Sorted(maps.Keys(answered[i])) {
			perCluster[cluster(b)] = append(perCluster[cluster(b)], fmt.Sprintf("%s %d", b, answered[i][b]))
		}
		var parts []string
		for _, cl := range slices.Sorted(maps.Keys(perCluster)) {
			parts = append(parts, fmt.Sprintf("%s (%s)", cl, strings.Join(perCluster[cl], ", ")))
		}
		fmt.Fprintf(out, "%s, %s: %s\n", r.method, r.desc, strings.Join(parts, "; "))
	}
	fmt.Fprintf(out, "OK: every RPC was answered (%d)\n", *rpcs)
	return nil
}

// cluster is the demo's cluster of backend.
func cluster(backend string) string {
	if backend == canaryBackend {
		return "cluster-svc-canary"
	}
	return "cluster-svc"
}

// addr is the address of p, the backend that answered.
func addr(p *peer.Peer) string {
	if p.Addr == nil {
		return "?"
	}
	return p.Addr.String()
}

// security says how the connection to p is secured.
func security(p *peer.Peer) string {
	info, ok := p.AuthInfo.(grpccreds.TLSInfo)
	switch {
	case !ok:
		return "plaintext"
	case info.SPIFFEID != nil:
		return "TLS as " + info.SPIFFEID.String()
	default:
		return "TLS"
	}
}
