// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Credentials types this package supports without options (R-1.3, R-3.1,
// WithChannelCredsTypes and WithCallCredsTypes add others.
const (
	// CredsInsecure is the "insecure" channel credentials type: plaintext.
	// Its config is ignored.
	CredsInsecure = "insecure"
	// CredsTLS is the "tls" channel credentials type of gRFC A65; its
	// config is parsed into TLSConfig.
	CredsTLS = "tls"
	// CredsGoogleDefault is the "google_default" channel credentials type
	// (gRFC A27): Google default credentials, TLS with application default
	// credentials, as Traffic Director uses. Its config is ignored. The
	// gRPC transport builds it only when given the builder of package
	// grpctransport/googledefault (which links golang.org/x/oauth2).
	CredsGoogleDefault = "google_default"

	// CallCredsJWTTokenFile is the "jwt_token_file" call credentials type
	// of gRFC A97: a JWT read from the file named by the config's
	// `jwt_token_file` (required) is sent as "authorization: Bearer
	// <token>" on the management server's streams; it needs a secure
	// channel ("tls" or "google_default").
	CallCredsJWTTokenFile = "jwt_token_file"
)

const (
	// DefaultRefreshInterval is TLSConfig.RefreshInterval when the file
	// gives no `refresh_interval` (gRFC A65).
	DefaultRefreshInterval = 10 * time.Minute

	// MaxSize is the largest bootstrap document Parse and FromEnv accept,
	// in bytes: 1 MiB, far above any real bootstrap (a few KiB) and small
	// enough that parsing stays cheap. Larger input is refused with an
	// error wrapping ErrTooLarge before it is parsed, and FromEnv does not
	// read more of a file than that.
	MaxSize = 1 << 20

	// DefaultClientListenerResourceNameTemplate is
	// Config.ClientDefaultListenerResourceNameTemplate when the file gives
	// none.
	DefaultClientListenerResourceNameTemplate = "%s"
)

// Parse parses and validates a gRPC xDS bootstrap document (gRFC A27, A47,
// A65; ..R-1.6) and returns a fresh Config the caller owns.
//
// The document is first normalised with json.Indent, so malformed JSON
// fails before anything else. Then:
//   - `xds_servers` must list at least one server, each with a non-empty
//     `server_uri` and at least one supported `channel_creds` entry; the
//     first supported entry ("insecure", "tls", "google_default", or a type
//     declared with WithChannelCredsTypes) is selected and the rest are
//     ignored. A server_uri of the file scheme (file:///PATH, a
//     filesystem subscription) or an http:// or https:// one (REST-JSON
//     polling) may leave `channel_creds` out, or empty: those transports
//     do not use channel credentials (package transport/mixed picks them
//     by the scheme; ).
//   - `call_creds` (gRFC A97, R-3.2): every entry of a supported type
//     ("jwt_token_file", or a type declared with WithCallCredsTypes) is
//     kept, in order; the others are ignored. A "jwt_token_file" entry
//     needs a config with a non-empty `jwt_token_file` string.
//   - a "tls" config follows gRFC A65: `certificate_file` and
//     `private_key_file` both or neither; `refresh_interval` a protobuf
//     JSON duration greater than zero, default DefaultRefreshInterval.
//   - `node`: `id`, `cluster`, `locality` and `metadata` are read; the
//     client-controlled fields (`user_agent_name`, `user_agent_version`,
//     `client_features`, `build_version`) are ignored.
//   - `authorities` (gRFC A47, R-1.4): a non-empty
//     `client_listener_resource_name_template` must start with
//     "xdstp://" + url.PathEscape(authority) + "/"; an empty or absent one
//     defaults to "xdstp://<escaped authority>/envoy.config.listener.v3.Listener/%s".
//     An authority with no `xds_servers` gets nil Servers: it uses the
//     top-level ones.
//   - `client_default_listener_resource_name_template` defaults to "%s";
//     `server_listener_resource_name_template` and `certificate_providers`
//     are kept as written.
//
// A document larger than MaxSize (1 MiB) is refused before it is parsed,
// with a *ParseError wrapping ErrTooLarge.
//
// Unknown fields are ignored (A27), and a JSON null is treated like an
// absent field. Every error is a *ParseError naming the JSON field, for
// example "bootstrap: xds_servers[0].server_uri: empty"; a field of the
// wrong JSON type gives "bootstrap: <field>: want a string, got number".
func Parse(data []byte, opts ...ParseOption) (*Config, error) {
	if len(data) > MaxSize {
		return nil, tooLarge(int64(len(data)))
	}
	// normalise first so that malformed JSON fails early.
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", ""); err != nil {
		return nil, &ParseError{Reason: "error normalizing JSON", Err: err}
	}
	top, err := object(buf.Bytes(), "")
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, wrongType("", "an object", "null")
	}

	p := &parser{opts: newParseOptions(opts)}
	c := &Config{}
	if c.Servers, err = p.parseServers(top["xds_servers"], "xds_servers"); err != nil {
		return nil, err
	}
	if len(c.Servers) == 0 {
		// xds_servers is required and lists at least one server.
		return nil, errAt("xds_servers", "empty")
	}
	if c.Node, err = parseNode(top["node"], "node"); err != nil {
		return nil, err
	}
	if c.Authorities, err = p.parseAuthorities(top["authorities"], "authorities"); err != nil {
		return nil, err
	}
	if c.ClientDefaultListenerResourceNameTemplate, err = str(top["client_default_listener_resource_name_template"], "client_default_listener_resource_name_template"); err != nil {
		return nil, err
	}
	if c.ClientDefaultListenerResourceNameTemplate == "" {
		c.ClientDefaultListenerResourceNameTemplate = DefaultClientListenerResourceNameTemplate
	}
	if c.ServerListenerResourceNameTemplate, err = str(top["server_listener_resource_name_template"], "server_listener_resource_name_template"); err != nil {
		return nil, err
	}
	if c.CertificateProviders, err = parseCertificateProviders(top["certificate_providers"], "certificate_providers"); err != nil {
		return nil, err
	}
	return c, nil
}

// parser holds what the parse of one document depends on besides it.
type parser struct {
	opts *parseOptions
}

// parseServers parses an `xds_servers` list. An absent, null or empty list
// gives nil; the caller decides whether that is an error.
func (p *parser) parseServers(raw json.RawMessage, path string) ([]*ServerConfig, error) {
	elems, err := array(raw, path)
	if err != nil || len(elems) == 0 {
		return nil, err
	}
	servers := make([]*ServerConfig, 0, len(elems))
	for i, e := range elems {
		sc, err := p.parseServer(e, index(path, i))
		if err != nil {
			return nil, err
		}
		servers = append(servers, sc)
	}
	return servers, nil
}

func (p *parser) parseServer(raw json.RawMessage, path string) (*ServerConfig, error) {
	obj, err := object(raw, path)
	if err != nil {
		return nil, err
	}
	sc := &ServerConfig{}
	if sc.ServerURI, err = str(obj["server_uri"], member(path, "server_uri")); err != nil {
		return nil, err
	}
	if sc.ServerURI == "" {
		return nil, errAt(member(path, "server_uri"), "empty")
	}
	if sc.ChannelCreds, err = p.parseChannelCreds(sc.ServerURI, obj["channel_creds"], member(path, "channel_creds")); err != nil {
		return nil, err
	}
	if sc.ServerFeatures, err = strs(obj["server_features"], member(path, "server_features")); err != nil {
		return nil, err
	}
	if sc.CallCreds, err = p.parseCallCreds(obj["call_creds"], member(path, "call_creds")); err != nil {
		return nil, err
	}
	return sc, nil
}

// parseChannelCreds selects the first entry of a supported type.
// Every entry must be an object with a string `type`; only the selected
// entry's `config` is looked at. A server that is not reached over gRPC
// (usesChannelCreds) may have none.
func (p *parser) parseChannelCreds(serverURI string, raw json.RawMessage, path string) (ChannelCreds, error) {
	elems, err := array(raw, path)
	if err != nil {
		return ChannelCreds{}, err
	}
	if len(elems) == 0 {
		if !usesChannelCreds(serverURI) {
			return ChannelCreds{}, nil
		}
		return ChannelCreds{}, errAt(path, "empty")
	}
	var (
		selected  = -1
		types     = make([]string, len(elems))
		selConfig json.RawMessage
	)
	for i, e := range elems {
		ep := index(path, i)
		obj, err := object(e, ep)
		if err != nil {
			return ChannelCreds{}, err
		}
		if types[i], err = str(obj["type"], member(ep, "type")); err != nil {
			return ChannelCreds{}, err
		}
		if selected < 0 && p.opts.channelCredsSupported(types[i]) {
			selected, selConfig = i, obj["config"]
		}
	}
	if selected < 0 {
		quoted := make([]string, len(types))
		for i, t := range types {
			quoted[i] = quote(t)
		}
		return ChannelCreds{}, errAt(path, "no supported type (saw "+strings.Join(quoted, ", ")+")")
	}

	cc := ChannelCreds{Type: types[selected]}
	cfgPath := member(index(path, selected), "config")
	if cc.Config, err = compact(selConfig, cfgPath); err != nil {
		return ChannelCreds{}, err
	}
	if cc.Type == CredsTLS {
		if cc.TLS, err = parseTLSConfig(selConfig, cfgPath); err != nil {
			return ChannelCreds{}, err
		}
	}
	return cc, nil
}

// parseCallCreds keeps the `call_creds` entries of supported types, in
// order (gRFC A97, R-3.2); nil when there are none. Every entry must be an
// object with a string `type`; a supported entry with an invalid config is
// an error.
func (p *parser) parseCallCreds(raw json.RawMessage, path string) ([]CallCreds, error) {
	elems, err := array(raw, path)
	if err != nil {
		return nil, err
	}
	var out []CallCreds
	for i, e := range elems {
		ep := index(path, i)
		obj, err := object(e, ep)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			return nil, wrongType(ep, "an object", "null")
		}
		typ, err := str(obj["type"], member(ep, "type"))
		if err != nil {
			return nil, err
		}
		if !p.opts.callCredsSupported(typ) {
			continue // unsupported types are ignored
		}
		cc := CallCreds{Type: typ}
		cfgPath := member(ep, "config")
		if cc.Config, err = compact(obj["config"], cfgPath); err != nil {
			return nil, err
		}
		if typ == CallCredsJWTTokenFile {
			cfg, err := object(obj["config"], cfgPath)
			if err != nil {
				return nil, err
			}
			fp := member(cfgPath, "jwt_token_file")
			if cc.JWTTokenFile, err = str(cfg["jwt_token_file"], fp); err != nil {
				return nil, err
			}
			if cc.JWTTokenFile == "" {
				return nil, errAt(fp, "empty")
			}
		}
		out = append(out, cc)
	}
	return out, nil
}

// parseTLSConfig parses the config of "tls" channel credentials (gRFC A65,
// An absent config means system roots, no client certificate and
// the default refresh interval.
func parseTLSConfig(raw json.RawMessage, path string) (*TLSConfig, error) {
	obj, err := object(raw, path)
	if err != nil {
		return nil, err
	}
	t := &TLSConfig{RefreshInterval: DefaultRefreshInterval}
	if t.CACertificateFile, err = str(obj["ca_certificate_file"], member(path, "ca_certificate_file")); err != nil {
		return nil, err
	}
	if t.CertificateFile, err = str(obj["certificate_file"], member(path, "certificate_file")); err != nil {
		return nil, err
	}
	if t.PrivateKeyFile, err = str(obj["private_key_file"], member(path, "private_key_file")); err != nil {
		return nil, err
	}
	switch {
	case t.CertificateFile != "" && t.PrivateKeyFile == "":
		return nil, errAt(member(path, "private_key_file"), "must be set when certificate_file is set")
	case t.CertificateFile == "" && t.PrivateKeyFile != "":
		return nil, errAt(member(path, "certificate_file"), "must be set when private_key_file is set")
	}
	if ri := obj["refresh_interval"]; !isNull(ri) {
		p := member(path, "refresh_interval")
		if k := kind(ri); k != "string" {
			return nil, errAt(p, "want a duration string such as \"600s\", got "+k)
		}
		var d durationpb.Duration
		if err := protojson.Unmarshal(ri, &d); err != nil {
			return nil, errWrap(p, "invalid duration "+string(ri), err)
		}
		if err := d.CheckValid(); err != nil {
			return nil, errWrap(p, "invalid duration "+string(ri), err)
		}
		// A non-positive interval cannot drive a ticker (time.NewTicker
		// panics), so it is rejected here rather than at use.
		if t.RefreshInterval = d.AsDuration(); t.RefreshInterval <= 0 {
			return nil, errAt(p, "must be greater than zero, got "+string(ri))
		}
	}
	return t, nil
}

func parseNode(raw json.RawMessage, path string) (Node, error) {
	obj, err := object(raw, path)
	if err != nil {
		return Node{}, err
	}
	var n Node
	if n.ID, err = str(obj["id"], member(path, "id")); err != nil {
		return Node{}, err
	}
	if n.Cluster, err = str(obj["cluster"], member(path, "cluster")); err != nil {
		return Node{}, err
	}
	lp := member(path, "locality")
	loc, err := object(obj["locality"], lp)
	if err != nil {
		return Node{}, err
	}
	if n.Locality.Region, err = str(loc["region"], member(lp, "region")); err != nil {
		return Node{}, err
	}
	if n.Locality.Zone, err = str(loc["zone"], member(lp, "zone")); err != nil {
		return Node{}, err
	}
	if n.Locality.SubZone, err = str(loc["sub_zone"], member(lp, "sub_zone")); err != nil {
		return Node{}, err
	}
	mp := member(path, "metadata")
	if md := obj["metadata"]; !isNull(md) {
		if k := kind(md); k != "object" {
			return Node{}, errAt(mp, "want an object, got "+k)
		}
		if err := json.Unmarshal(md, &n.Metadata); err != nil {
			return Node{}, errWrap(mp, "invalid object", err)
		}
	}
	// A27: user_agent_name, user_agent_version, client_features and
	// build_version are controlled by the client and never read.
	return n, nil
}

// parseAuthorities parses `authorities` (gRFC A47, R-1.4). It returns nil
// when the field is absent, null or an empty object.
func (p *parser) parseAuthorities(raw json.RawMessage, path string) (map[string]*Authority, error) {
	obj, err := object(raw, path)
	if err != nil || len(obj) == 0 {
		return nil, err
	}
	auths := make(map[string]*Authority, len(obj))
	for name, v := range obj {
		ap := key(path, name)
		ao, err := object(v, ap)
		if err != nil {
			return nil, err
		}
		a := &Authority{}
		tp := member(ap, "client_listener_resource_name_template")
		if a.ClientListenerResourceNameTemplate, err = str(ao["client_listener_resource_name_template"], tp); err != nil {
			return nil, err
		}
		// A47: the template must be an xdstp name of this very authority.
		// The check includes the "/" after the authority (the gRFC's
		// wording), so authority "a" does not accept "xdstp://ab/...".
		prefix := "xdstp://" + url.PathEscape(name) + "/"
		switch {
		case a.ClientListenerResourceNameTemplate == "":
			a.ClientListenerResourceNameTemplate = prefix + "envoy.config.listener.v3.Listener/%s"
		case !strings.HasPrefix(a.ClientListenerResourceNameTemplate, prefix):
			return nil, errAt(tp, "must start with "+quote(prefix))
		}
		if a.Servers, err = p.parseServers(ao["xds_servers"], member(ap, "xds_servers")); err != nil {
			return nil, err
		}
		auths[name] = a
	}
	return auths, nil
}

// parseCertificateProviders keeps `certificate_providers` as written: no
// plugin is known yet, and unknown plugins are skipped silently by the
// code that will use them.
func parseCertificateProviders(raw json.RawMessage, path string) (map[string]CertificateProvider, error) {
	obj, err := object(raw, path)
	if err != nil || len(obj) == 0 {
		return nil, err
	}
	cps := make(map[string]CertificateProvider, len(obj))
	for name, v := range obj {
		p := key(path, name)
		po, err := object(v, p)
		if err != nil {
			return nil, err
		}
		var cp CertificateProvider
		if cp.PluginName, err = str(po["plugin_name"], member(p, "plugin_name")); err != nil {
			return nil, err
		}
		if cp.Config, err = compact(po["config"], member(p, "config")); err != nil {
			return nil, err
		}
		cps[name] = cp
	}
	return cps, nil
}

// The helpers below decode one JSON value, named by its field path, and
// report a wrong JSON type as a *ParseError. Each treats an absent field
// (nil raw) and a JSON null alike, returning the zero value.

// object decodes a JSON object into its members; nil when absent or null.
func object(raw json.RawMessage, path string) (map[string]json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	if k := kind(raw); k != "object" {
		return nil, wrongType(path, "an object", k)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errWrap(path, "invalid object", err)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

// array decodes a JSON array into its elements; nil when absent or null.
func array(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	if k := kind(raw); k != "array" {
		return nil, wrongType(path, "an array", k)
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, errWrap(path, "invalid array", err)
	}
	return a, nil
}

// str decodes a JSON string; "" when absent or null.
func str(raw json.RawMessage, path string) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if k := kind(raw); k != "string" {
		return "", wrongType(path, "a string", k)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errWrap(path, "invalid string", err)
	}
	return s, nil
}

// strs decodes a list of strings, keeping their order; nil when absent,
// null or empty.
func strs(raw json.RawMessage, path string) ([]string, error) {
	elems, err := array(raw, path)
	if err != nil || len(elems) == 0 {
		return nil, err
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if isNull(e) {
			return nil, wrongType(index(path, i), "a string", "null")
		}
		if out[i], err = str(e, index(path, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compact returns raw without insignificant white space (json.Indent left
// newlines in it), or nil when absent or null.
func compact(raw json.RawMessage, path string) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, errWrap(path, "invalid JSON", err)
	}
	return buf.Bytes(), nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// kind names the JSON type of a valid JSON value by its first byte.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// tooLarge is the error for a document of size bytes (-1: unknown),
// above MaxSize.
func tooLarge(size int64) *ParseError {
	reason := fmt.Sprintf("document larger than the limit of %d bytes", MaxSize)
	if size >= 0 {
		reason = fmt.Sprintf("document of %d bytes is larger than the limit of %d bytes", size, MaxSize)
	}
	return &ParseError{Reason: reason, Err: ErrTooLarge}
}

func wrongType(path, want, got string) *ParseError {
	if path == "" {
		return &ParseError{Reason: "want " + want + " at the top level, got " + got}
	}
	return errAt(path, "want "+want+", got "+got)
}

func errAt(path, reason string) *ParseError {
	return &ParseError{Field: path, Reason: reason}
}

func errWrap(path, reason string, err error) *ParseError {
	return &ParseError{Field: path, Reason: reason, Err: err}
}

// member, index and key build field paths: `a.b`, `a[0]`, `a["k"]`.
func member(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }

func key(parent, k string) string { return parent + "[" + quote(k) + "]" }

func quote(s string) string { return strconv.Quote(s) }
