// SPDX-License-Identifier: Apache-2.0

// Package gcpauthn gives the GCP authentication filter of xDS (gRFC A83)
// its call credentials: ID tokens for an audience from the GCE metadata
// server, on GCP. It is a package of its own so that programs that do not
// use the filter do not link Google's credentials, OAuth included.
//
// An Authenticator holds, per filter instance, a cache of call
// credentials by audience, bounded by the filter's cache_size and emptied
// least recently used first; the credentials are grpc-go's
// credentials/google.NewServiceAccountIdentityCredentials, which fetch
// http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/identity?audience=AUDIENCE
// (GCE_METADATA_HOST replaces the host) when an RPC needs a token, keep
// it until 30 seconds before its expiry, refresh it ahead of time, back
// off after failures, and fail RPCs with UNAVAILABLE or UNAUTHENTICATED
// as A83 says. They add "authorization: Bearer TOKEN" only on connections
// with transport security (TLS): on others the RPC fails. Give it to a
// channel with xdsresolver.WithGCPAuthentication:
//
//	auth := gcpauthn.New()
//	defer auth.Close() // after the channels
//	cc, err := grpc.NewClient("xds:///svc", xdsresolver.DialOptions(c, xdsresolver.WithGCPAuthentication(auth))...)
package gcpauthn
