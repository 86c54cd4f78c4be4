// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"errors"

	"github.com/proxyless/xds/internal/dataplane"
)

// Errors of the conversion of a configuration into a State. The errors
// reported to the channel wrap them; test with errors.Is.
var (
	// ErrNoRoute is wrapped when the selected virtual host has no route.
	ErrNoRoute = dataplane.ErrNoRoute

	// ErrNoUsableEndpoints is wrapped by the error of a cluster that has
	// no endpoint the router may use: none at all, or none HEALTHY or
	// UNKNOWN. RPCs routed to it fail.
	ErrNoUsableEndpoints = dataplane.ErrNoUsableEndpoints

	// ErrUnsupported is wrapped by the error of a cluster whose load
	// balancing policy cannot be run (unknown, or its grpc balancer not
	// registered), and of a route whose fault filter has an override of
	// another filter's type; their RPCs fail. See the package doc,
	// "What is honoured".
	ErrUnsupported = dataplane.ErrUnsupported

	// ErrServiceConfigDisabled is wrapped by the error of Build on a
	// channel made with grpc.WithDisableServiceConfig: the resolver hands
	// the channel its LB policy (the router) in the service config, so
	// it needs service configs; the channel's RPCs fail with this error.
	ErrServiceConfigDisabled = errors.New("the xds resolver needs service configs: the router LB policy is set by the service config it produces; remove grpc.WithDisableServiceConfig")

	// ErrGRPCXDSCredentials is wrapped by the error of Build on a channel
	// whose transport credentials are grpc-go's credentials/xds
	// (credentials that report UsesXDS): they read a cluster's TLS
	// configuration only from grpc-go's own xDS balancers and, without
	// it, connect to every cluster with their fallback credentials,
	// plaintext where the cluster asks for TLS. The channel's RPCs fail
	// with this error. Use DialOptions, or package xdscreds' credentials
	// (xdscreds.NewClientCredentials takes the same options).
	ErrGRPCXDSCredentials = errors.New("the channel's transport credentials are grpc-go's credentials/xds, which cannot read the TLS configuration this resolver gives a cluster's connections and would connect to every cluster with their fallback credentials: use xdsresolver.DialOptions, or xdscreds.NewClientCredentials (package github.com/proxyless/xds/xdscreds, with the same ClientOptions) in their place")
)
