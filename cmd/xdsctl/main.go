// SPDX-License-Identifier: Apache-2.0

// Command xdsctl looks at an xDS management server the way a proxyless gRPC
// client sees it. It is built on the public API of
// github.com/proxyless/xds only.
//
// Usage:
//
//	xdsctl demo   [--duration D] [--interval D]
//	xdsctl watch  [--bootstrap FILE] [--output text|json] [--resource-timeout D] TYPE/NAME...
//	xdsctl status [--bootstrap FILE] [--wait D] [--output text|json] [--resource-timeout D] TYPE/NAME...
//	xdsctl help   [COMMAND]
//
// TYPE is listener, route, cluster or endpoints (or lds, rds, cds, eds).
// Without --bootstrap, the bootstrap comes from GRPC_XDS_BOOTSTRAP or
// GRPC_XDS_BOOTSTRAP_CONFIG. Run "xdsctl help COMMAND" for the details of
// a command.
//
// Exit codes: 0 on success (including Ctrl-C of demo and watch), 1 on a
// runtime failure, 2 on a usage error.
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
