// SPDX-License-Identifier: Apache-2.0

package bootstrap

// ParseOption configures Parse and FromEnv.
type ParseOption func(*parseOptions)

// parseOptions are the credentials types Parse treats as supported,
// besides the built-in ones.
type parseOptions struct {
	channelCreds map[string]bool // extra `channel_creds` types
	callCreds    map[string]bool // extra `call_creds` types
}

func newParseOptions(opts []ParseOption) *parseOptions {
	po := &parseOptions{}
	for _, o := range opts {
		o(po)
	}
	return po
}

// WithChannelCredsTypes makes Parse treat the named `channel_creds` types
// as supported, besides the built-in CredsInsecure, CredsTLS and
// CredsGoogleDefault: the first entry of a supported type
// is selected, and its `config` is kept as written in ChannelCreds.Config
// for the transport to interpret (grpctransport.WithChannelCreds builds
// it). Declaring a built-in type changes nothing. It is how user-defined
// credentials are plugged in, with no global registry: pass the same
// names to every Parse or FromEnv whose result is given to a transport
// that can build them.
func WithChannelCredsTypes(types ...string) ParseOption {
	return func(po *parseOptions) {
		if po.channelCreds == nil {
			po.channelCreds = make(map[string]bool)
		}
		for _, t := range types {
			po.channelCreds[t] = true
		}
	}
}

// WithCallCredsTypes makes Parse keep `call_creds` entries of the named
// types, besides the built-in CallCredsJWTTokenFile (gRFC A97, R-3.2):
// entries of supported types are all kept, in file order, with their
// `config` as written; other entries are ignored. Declaring a built-in
// type changes nothing.
func WithCallCredsTypes(types ...string) ParseOption {
	return func(po *parseOptions) {
		if po.callCreds == nil {
			po.callCreds = make(map[string]bool)
		}
		for _, t := range types {
			po.callCreds[t] = true
		}
	}
}

// channelCredsSupported reports whether a `channel_creds` type is selected.
func (po *parseOptions) channelCredsSupported(t string) bool {
	switch t {
	case CredsInsecure, CredsTLS, CredsGoogleDefault:
		return true
	}
	return po.channelCreds[t]
}

// callCredsSupported reports whether a `call_creds` entry is kept.
func (po *parseOptions) callCredsSupported(t string) bool {
	return t == CallCredsJWTTokenFile || po.callCreds[t]
}
