// SPDX-License-Identifier: Apache-2.0

// Command xdsctl looks at an xDS management server the way a proxyless gRPC
// client sees it. It is built on the public API of
// github.com/proxyless/xds only.
//
// Usage:
//
//	xdsctl demo     [--bootstrap-out FILE] [--admin ADDR] [--duration D] [--interval D] [--delta] [-o FORMAT]
//	xdsctl watch    [CONNECTION] [--delta] [PERSIST] [-o FORMAT] [--resource-timeout D] TYPE/NAME...
//	xdsctl resolve  [CONNECTION] [--delta] [PERSIST] [--once [--timeout D]] [-o FORMAT] [--authority A] [--resource-timeout D] LISTENER
//	xdsctl status   [CONNECTION | --csds ADDR] [--delta] [PERSIST] [--wait D] [-o FORMAT] [--resource-timeout D] TYPE/NAME...
//	xdsctl validate [--bootstrap FILE] [-o FORMAT] FILE...
//	xdsctl conformance (--server HOST:PORT [--node ID] [TLS] | --bootstrap FILE) [--listener NAME]... [--variant sotw|delta|both] [--per-type] [--rest URL] [-o table|json|yaml]
//	xdsctl help     [COMMAND]
//
// CONNECTION is --bootstrap FILE, or --server HOST:PORT [--node ID]
// [--insecure | --tls [--tls-ca-file F] [--tls-cert-file F --tls-key-file F]]
// for a quick look without a bootstrap file; without either, the bootstrap
// comes from GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG. Servers are
// reached over one ADS stream each, or one stream per type with
// --per-type (or the bootstrap server feature "xds_per_type"); a bootstrap
// server_uri file:///PATH or http(s)://HOST:PORT is read as a filesystem
// subscription or polled over REST-JSON. CONNECTION can also be
// --rest http://HOST:PORT [--rest-interval D] [--node ID] (REST-JSON
// polling, SotW) or --file PATH [--node ID] (a DiscoveryResponse file or a
// directory of them, re-read when replaced; no server). watch,
// resolve and status also take --max-recv-msg-size BYTES and --log-level
// LEVEL (trace, debug, info, warn, error). PERSIST is --persist-dir DIR
// [--persist-timeout D]: the values received are saved in DIR and, when no
// management server answers within D (10s by default) of the start, the
// saved ones are served, marked stale. watch events and the status table
// (column SERVER, STATUS ACKED(stale)) say which management server sent
// each value and whether it is stale. FORMAT (-o or --output) is text,
// json or yaml, with one contract for every command: json prints one JSON
// object per line (per record) and nothing else on stdout, yaml the same
// records as YAML documents, each starting with "---", and every key is
// snake_case, the protos printed included (their proto field names, as
// protojson's UseProtoNames writes them).
//
// TYPE is listener, route, cluster or endpoints (or lds, rds, cds, eds,
// or the type names the output prints, RouteConfiguration and
// ClusterLoadAssignment; in any case);
// TYPE/* names every resource of the type (a wildcard subscription).
// --delta speaks incremental xDS to every server (a server can also ask
// for it with the bootstrap server feature "delta_ads"). Run
// "xdsctl help COMMAND" for the details of a command.
//
// Exit codes: 0 on success (including Ctrl-C of demo, watch and resolve),
// 1 on a runtime failure (for validate: an invalid resource), 2 on a usage
// error (for validate: an unreadable input); status exits 3 when a
// resource is NACKED, 4 when one does not exist, 5 when one was not
// received in time, 6 when one is stale (served only from the copy in
// --persist-dir); status --csds applies the same codes to the resources
// the CSDS server reports.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
