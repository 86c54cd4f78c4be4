// SPDX-License-Identifier: Apache-2.0

// Command xdsctl looks at an xDS management server the way a proxyless gRPC
// client sees it. It is built on the public API of
// github.com/proxyless/xds only.
//
// Usage:
//
//	xdsctl demo     [--duration D] [--interval D] [--delta]
//	xdsctl watch    [--bootstrap FILE] [--delta] [--output text|json] [--resource-timeout D] TYPE/NAME...
//	xdsctl resolve  [--bootstrap FILE] [--delta] [--once] [--output text|json] [--authority A] [--resource-timeout D] LISTENER
//	xdsctl status   [--bootstrap FILE] [--delta] [--wait D] [--output text|json] [--resource-timeout D] TYPE/NAME...
//	xdsctl validate [--output text|json] FILE...
//	xdsctl help     [COMMAND]
//
// TYPE is listener, route, cluster or endpoints (or lds, rds, cds, eds).
// Without --bootstrap, the bootstrap comes from GRPC_XDS_BOOTSTRAP or
// GRPC_XDS_BOOTSTRAP_CONFIG. --delta speaks incremental xDS to every
// server (a server can also ask for it with the bootstrap server feature
// "delta_ads"). Run "xdsctl help COMMAND" for the details of a command.
//
// Exit codes: 0 on success (including Ctrl-C of demo, watch and resolve),
// 1 on a runtime failure (for validate: an invalid resource), 2 on a usage
// error (for validate: an unreadable input).
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
