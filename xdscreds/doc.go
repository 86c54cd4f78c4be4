// SPDX-License-Identifier: Apache-2.0

// Package xdscreds gives gRPC channels TLS and mutual TLS configured by
// xDS (gRFC A29): the management server's Cluster says, in its
// transport_socket (an UpstreamTlsContext), which certificate provider
// instances of the bootstrap give the roots that verify the servers and
// the client's own certificate, and which server identities are accepted
// (match_subject_alt_names); the channel's connections to that cluster's
// endpoints then use them. It is the counterpart of grpc-go's
// credentials/xds, with the same shape, built on gRPC's public API only.
// xdsresolver.DialOptions gives a channel these credentials (with
// plaintext fallback unless xdsresolver.WithFallbackCredentials); a
// channel made with xdsresolver.NewBuilder alone takes them as a grpc-go
// channel takes grpc-go's:
//
//	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{
//		FallbackCreds: insecure.NewCredentials(), // clusters without TLS, channels not on xDS
//	})
//	cc, err := grpc.NewClient("xds:///svc",
//		grpc.WithResolvers(xdsresolver.NewBuilder(c)),
//		grpc.WithTransportCredentials(creds))
//
// # How the configuration reaches the handshake
//
// The resolver's balancer (package xdsresolver) acquires the certificate
// providers of each cluster with a security config from a ProviderStore
// and puts them, with the cluster's SAN matchers, in the attributes of
// every address of the cluster's endpoints. At each handshake, the
// credentials read them through grpc's
// credentials.ClientHandshakeInfoFromContext. An address without them
// (a cluster without transport socket, a channel built with another
// resolver) gets the fallback credentials' handshake. A cluster whose
// security config changes gets new connections.
//
// # Verification
//
// A handshake takes the current key material of the cluster's providers:
// new certificate files are used by the next handshake, existing
// connections are not affected. The server's chain is verified by
// crypto/x509 for server authentication against:
//   - the root provider's CA certificates (ca_certificate_file);
//   - with a SPIFFE trust bundle map (spiffe_trust_bundle_map_file, gRFC
//     A87), the bundle of the trust domain of the server's SPIFFE ID; a
//     server certificate without exactly one SPIFFE ID, or of a trust
//     domain the map lacks, is rejected;
//   - with validation_context.system_root_certs and no root provider
//     (gRFC A82), the system's roots.
//
// Then one of the server certificate's SANs (DNS names, URIs, email
// addresses, IP addresses) must match one of match_subject_alt_names, when
// there are any; an exact matcher follows the DNS wildcard rules against
// a DNS SAN ("*.example.com" in a certificate matches the exact value
// "api.example.com"). There is no host name check against the channel's
// authority: the SAN matchers replace it. A handshake that fails makes
// the RPCs that needed the connection fail with UNAVAILABLE, their status
// message saying why ("x509: certificate signed by unknown authority",
// "... match none of match_subject_alt_names"). The client presents the
// identity provider's certificate, if the cluster names one (mTLS). See
// docs/security.md and rules of docs/protocol.md.
//
// # SNI
//
// The server name a handshake sends (SNI, gRFC A101) is the endpoint's
// host name (EDS Endpoint.hostname, or a LOGICAL_DNS cluster's DNS name
// without its port) when the UpstreamTlsContext has auto_host_sni and the
// endpoint has one, else its sni, else none: never the channel's
// authority. With auto_sni_san_validation and an SNI, the server
// certificate must instead be valid for that name, by crypto/x509's host
// name check (a DNS SAN, wildcards as crypto/x509 reads them; an IP SAN
// for an IP address), and match_subject_alt_names is not used; without an
// SNI, match_subject_alt_names applies as usual.
//
// # Certificate providers
//
// The instances a Cluster names (CertificateProviderPluginInstance) are
// those of the bootstrap's certificate_providers, held by a
// ProviderStore: its providers are shared by every cluster and channel
// that names them, started on first use and stopped when the last user
// goes. The built-in plugin is "file_watcher" (certificate_file,
// private_key_file, ca_certificate_file, spiffe_trust_bundle_map_file,
// refresh_interval, default 10 minutes), on grpc-go's
// certprovider/pemfile. Plugins of your own implement ProviderPlugin and
// are given to the store with WithProviderPlugins; make it with
// NewClientProviderStore, which reads the client's bootstrap and logs with
// the client's logger, and give it to the resolver
// (xdsresolver.WithCertificateProviders):
//
//	store := xdscreds.NewClientProviderStore(c, xdscreds.WithProviderPlugins(myPlugin{}))
//	b := xdsresolver.NewBuilder(c, xdsresolver.WithCertificateProviders(store))
//
// # Servers
//
// NewServerCredentials gives the same to an xDS-enabled server (package
// server, gRFC A36): a connection whose filter chain has a
// DownstreamTlsContext does the TLS handshake of that chain, presenting
// the identity provider's certificate and, with a root provider,
// verifying the client's certificate (required with
// require_client_certificate) against the roots or the SPIFFE trust
// bundle of its trust domain; other connections get the fallback
// credentials' handshake:
//
//	creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
//	srv, err := server.NewGRPCServer(c, server.WithServerOptions(grpc.Creds(creds)))
//
// The filter chain picked for each accepted connection travels with the
// connection itself (it implements an interface of ours that
// ServerHandshake reads). The server acquires the chain's providers from
// its ProviderStore (server.WithCertificateProviders) and releases them
// when the chain's connections are gone.
//
// # Concurrency
//
// Credentials are immutable and safe for concurrent use by any number of
// channels.
package xdscreds
