// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"encoding/json"
	"strings"
)

// Server features: the `server_features` strings that change what the
// client does. Other strings are kept in ServerConfig.ServerFeatures
// and otherwise ignored: among them "xds_v3", historical (gRFC A30: every
// client speaks xDS v3 only; ).
const (
	// FeatureIgnoreResourceDeletion asks the client to keep a cached
	// Listener or Cluster that a SotW response no longer names, instead of
	// reporting it deleted (gRFC A53, R-2.1).
	FeatureIgnoreResourceDeletion = "ignore_resource_deletion"

	// FeatureFailOnDataErrors makes data errors (NACK, deletion, TP3 errors)
	// drop the cached resource (gRFC A88, R-2.4).
	FeatureFailOnDataErrors = "fail_on_data_errors"

	// FeatureResourceTimerIsTransientError turns the does-not-exist timer
	// into a transient error (gRFC A88, R-2.5). HasFeature also accepts
	// the spelling "resource_timer_is_transient_failure", which the gRFC
	// uses once.
	FeatureResourceTimerIsTransientError = "resource_timer_is_transient_error"

	// FeatureDeltaADS makes the client speak incremental (delta) xDS to
	// the server: one DeltaAggregatedResources stream instead of
	// StreamAggregatedResources (xDS protocol, "Incremental xDS"; ).
	// The string names the RPC variant exactly, both dimensions of the
	// protocol's "four variants": incremental, aggregated. The client
	// option client.WithDelta turns it on for every server. Without it the
	// server is spoken to in SotW.
	FeatureDeltaADS = "delta_ads"

	// FeatureTrustedXDSServer marks a server trusted with configuration
	// that affects security (gRFC A81, R-2.3): package xdsresolver
	// honours a route's auto_host_rewrite only in a RouteConfiguration of
	// an authority all of whose servers list it (TrustedXDSServer). It
	// changes nothing about the connection to the server, so it is not
	// part of Key.
	FeatureTrustedXDSServer = "trusted_xds_server"

	// featureResourceTimerIsTransientFailure is the gRFC A88 misspelling of
	// FeatureResourceTimerIsTransientError, accepted as an alias (R-2.5
	// "BEAT").
	featureResourceTimerIsTransientFailure = "resource_timer_is_transient_failure"
)

// behaviourFeatures are the server features that change what the client
// does with a server, in sorted order. They, and only they, are part of
// Key: two entries that differ only in other strings ("xds_v3", unknown
// ones) behave the same and share one channel.
var behaviourFeatures = []string{
	FeatureDeltaADS,
	FeatureFailOnDataErrors,
	FeatureIgnoreResourceDeletion,
	FeatureResourceTimerIsTransientError,
}

// HasFeature reports whether feature is listed in sc.ServerFeatures. For
// FeatureResourceTimerIsTransientError it also accepts
// "resource_timer_is_transient_failure".
func (sc *ServerConfig) HasFeature(feature string) bool {
	for _, f := range sc.ServerFeatures {
		if f == feature || (feature == FeatureResourceTimerIsTransientError && f == featureResourceTimerIsTransientFailure) {
			return true
		}
	}
	return false
}

// IgnoreResourceDeletion reports whether the server lists
// FeatureIgnoreResourceDeletion (gRFC A53, R-2.1).
func (sc *ServerConfig) IgnoreResourceDeletion() bool {
	return sc.HasFeature(FeatureIgnoreResourceDeletion)
}

// TrustedXDSServer reports whether the server lists
// FeatureTrustedXDSServer (gRFC A81, R-2.3).
func (sc *ServerConfig) TrustedXDSServer() bool {
	return sc.HasFeature(FeatureTrustedXDSServer)
}

// DeltaADS reports whether the server lists FeatureDeltaADS: the client
// then uses incremental (delta) ADS with it.
func (sc *ServerConfig) DeltaADS() bool {
	return sc.HasFeature(FeatureDeltaADS)
}

// Key returns the identity of the management server for channel sharing
// (gRFC A47 "Server Channel Map", R-1.5): two ServerConfigs with equal keys
// are served by one channel and one ADS stream, even when different
// authorities list them.
//
// The key covers ServerURI, the selected ChannelCreds.Type, the
// credentials' config in canonical form (the parsed TLSConfig fields for
// "tls"; nothing for "insecure", whose config is ignored; the compact raw
// config for any other type) and the known server features that change
// behaviour (FeatureDeltaADS among them: a delta and a SotW entry for the
// same server get two channels and two streams), de-duplicated and sorted,
// and the call credentials (type and compact config, in order), which are
// applied to the whole channel.
// Unknown features and FeatureXDSV3
// are not part of it, and neither is feature order. The key is an opaque
// string meant for map keys and equality only; its format may change.
// Key panics if sc is nil.
func (sc *ServerConfig) Key() string {
	type tlsKey struct {
		CA      string `json:"ca,omitempty"`
		Cert    string `json:"cert,omitempty"`
		Key     string `json:"key,omitempty"`
		Refresh int64  `json:"refresh_ns"`
	}
	k := struct {
		URI      string   `json:"uri"`
		Creds    string   `json:"creds"`
		TLS      *tlsKey  `json:"tls,omitempty"`
		Config   string   `json:"config,omitempty"`
		Features []string `json:"features,omitempty"`
		Call     []string `json:"call,omitempty"`
	}{URI: sc.ServerURI, Creds: sc.ChannelCreds.Type}
	switch cc := sc.ChannelCreds; {
	case cc.TLS != nil:
		k.TLS = &tlsKey{
			CA:      cc.TLS.CACertificateFile,
			Cert:    cc.TLS.CertificateFile,
			Key:     cc.TLS.PrivateKeyFile,
			Refresh: int64(cc.TLS.RefreshInterval),
		}
	case cc.Type != CredsInsecure:
		k.Config = canonicalConfig(cc.Config)
	}
	for _, c := range sc.CallCreds {
		k.Call = append(k.Call, c.Type, canonicalConfig(c.Config))
	}
	for _, f := range behaviourFeatures {
		if sc.HasFeature(f) {
			k.Features = append(k.Features, f)
		}
	}
	// behaviourFeatures is sorted, so k.Features is too.
	b, _ := json.Marshal(k) // cannot fail: only strings, ints and slices of strings
	return string(b)
}

// canonicalConfig returns a raw config without insignificant white space
// ("" when absent or null), for Key.
func canonicalConfig(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	c, err := compact(raw, "")
	if err != nil {
		// Not valid JSON (only possible for a hand-built config): use the
		// bytes as they are.
		return string(raw)
	}
	return string(c)
}

// usesChannelCreds reports whether the server at serverURI is reached over
// gRPC, so that its entry needs `channel_creds`: false for the
// file scheme (file:///PATH, read by transport/file) and for http:// and
// https:// (REST-JSON polling, transport/rest), whose transports use no
// channel credentials (an https server's TLS is the HTTP client's). The
// scheme is matched in any case, as transport/mixed matches it.
func usesChannelCreds(serverURI string) bool {
	u := strings.ToLower(serverURI)
	return !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://")
}
