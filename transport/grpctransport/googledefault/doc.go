// SPDX-License-Identifier: Apache-2.0

// Package googledefault provides the "google_default" channel credentials
// of the gRPC xDS bootstrap (gRFC A27, R-3.1) for package grpctransport:
// Google default credentials from grpc-go's credentials/google, that is
// TLS with the system roots (ALTS for Google-internal backends) and
// OAuth2 application default credentials as per-RPC credentials, as
// Traffic Director expects. It lives in its own package so that programs
// that do not use it do not link golang.org/x/oauth2.
//
//	b := grpctransport.NewBuilder(grpctransport.WithChannelCreds(googledefault.Builder{}))
//	c, err := client.New(cfg, client.WithTransportBuilder(b))
//
// The application default credentials are looked up when the channel is
// created (client.New or the first watch on the server): the file named
// by GOOGLE_APPLICATION_CREDENTIALS, gcloud's well-known file, or the GCE
// metadata server (which is a network lookup). Finding none is not an
// error at that point: RPCs then carry no OAuth2 token, and the
// management server rejects the stream, which the client reports.
package googledefault
