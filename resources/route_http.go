// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// What an HTTP data plane reads of a RouteConfiguration beyond what gRPC
// uses (R-17.7, docs/http.md): query parameter matchers, HTTP retry
// conditions, timeouts, rewrites, header mutations, and the hash policies
// of HTTP. They are decoded once, with the rest, so that a data plane
// never reads the protos again; the gRPC path ignores them, but for the
// request header mutations, which xdsresolver.DialOptions applies to an
// RPC's metadata. Malformed
// input (a pattern that does not compile, a header that cannot be
// modified, two rewrites) makes the resource invalid, as in Envoy, and as
// this package is stricter than grpc-go wherever input is malformed;
// routes the gRPC path leaves out (query_parameters, R-17.3) never make
// the resource invalid: a problem there leaves the route out of
// VirtualHost.HTTPRoutes, noted in VirtualHost.HTTPRouteErrors.

// QueryParameterMatcher matches one query parameter of an HTTP request
// (RouteMatch.query_parameters). As in Envoy, only the parameter's first
// value is matched, and a matcher without string_match matches when the
// parameter is present (present_match true or false alike).
type QueryParameterMatcher struct {
	// Name is the parameter's name, as received, never empty.
	Name string
	// Value is string_match; its Kind is 0 for a presence match.
	Value StringMatcher
}

// HTTPRetryOn is a set of the HTTP retry conditions of a retry policy's
// retry_on (Envoy's x-envoy-retry-on); the gRPC status codes are in
// RetryPolicy.RetryOn.
type HTTPRetryOn uint16

// The HTTP retry conditions (Envoy's router, x-envoy-retry-on).
const (
	// RetryOn5xx: a 5xx response, or no response (connection failure,
	// reset, per-try timeout).
	RetryOn5xx HTTPRetryOn = 1 << iota
	// RetryOnGatewayError: a 502, 503 or 504 response, or no response.
	RetryOnGatewayError
	// RetryOnReset: no response (connection failure, reset, per-try
	// timeout).
	RetryOnReset
	// RetryOnResetBeforeRequest: a reset or connection failure before the
	// request was sent.
	RetryOnResetBeforeRequest
	// RetryOnConnectFailure: the connection could not be made.
	RetryOnConnectFailure
	// RetryOnRefusedStream: the server refused the HTTP/2 stream
	// (REFUSED_STREAM).
	RetryOnRefusedStream
	// RetryOnRetriable4xx: a 409 response.
	RetryOnRetriable4xx
	// RetryOnRetriableStatusCodes: a status in RetriableStatusCodes.
	RetryOnRetriableStatusCodes
	// RetryOnRetriableHeaders: a response header matching
	// RetriableHeaders.
	RetryOnRetriableHeaders
	// RetryOnEnvoyRateLimited: a response with x-envoy-ratelimited.
	RetryOnEnvoyRateLimited
)

// httpRetryOnNames are the retry_on names of the HTTP conditions, in the
// order of the constants.
var httpRetryOnNames = [...]string{
	"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure",
	"refused-stream", "retriable-4xx", "retriable-status-codes", "retriable-headers",
	"envoy-ratelimited",
}

// String returns the conditions as retry_on writes them, for example
// "5xx,connect-failure"; "" for none.
func (r HTTPRetryOn) String() string {
	var b strings.Builder
	for i, n := range httpRetryOnNames {
		if r&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(n)
		}
	}
	return b.String()
}

// httpRetryOn returns the HTTP condition named s (lowercase, trimmed), 0
// for another.
func httpRetryOn(s string) HTTPRetryOn {
	for i, n := range httpRetryOnNames {
		if s == n {
			return 1 << i
		}
	}
	return 0
}

// HeaderMutations are the header changes of one level of a
// RouteConfiguration (the configuration, a virtual host, a route or a
// weighted cluster): Envoy's custom request and response headers. At each
// level the removals apply before the additions.
type HeaderMutations struct {
	// RequestHeadersToAdd is request_headers_to_add, in order.
	RequestHeadersToAdd []HeaderValueOption
	// RequestHeadersToRemove is request_headers_to_remove, lowercased.
	RequestHeadersToRemove []string
	// ResponseHeadersToAdd is response_headers_to_add, in order.
	ResponseHeadersToAdd []HeaderValueOption
	// ResponseHeadersToRemove is response_headers_to_remove, lowercased.
	ResponseHeadersToRemove []string
}

// HeaderValueOption is one header to add (envoy HeaderValueOption).
type HeaderValueOption struct {
	// Name is the header name, lowercased; never empty, never a
	// pseudo-header (":path") nor "host", which Envoy does not let a
	// route modify.
	Name string
	// Value is value, or raw_value when set, with Envoy's escape "%%"
	// read as "%". Envoy's command operators (%…%) are not evaluated:
	// the value is literal.
	Value string
	// Action is append_action, or what the deprecated append says when
	// append_action is unset (false: OverwriteIfExistsOrAdd).
	Action HeaderAppendAction
	// KeepEmptyValue is keep_empty_value: an empty value is added rather
	// than dropped.
	KeepEmptyValue bool
}

// HeaderAppendAction is what adding a header does with the values it
// has (envoy HeaderValueOption.HeaderAppendAction, same numbers).
type HeaderAppendAction uint8

// The header append actions.
const (
	// AppendIfExistsOrAdd adds the value to the header's values (the
	// default).
	AppendIfExistsOrAdd HeaderAppendAction = iota
	// AddIfAbsent adds the header only when it is absent.
	AddIfAbsent
	// OverwriteIfExistsOrAdd replaces the header's values, or adds it.
	OverwriteIfExistsOrAdd
	// OverwriteIfExists replaces the header's values, only when it is
	// present.
	OverwriteIfExists
)

// String returns the action's proto name, for example
// "APPEND_IF_EXISTS_OR_ADD".
func (a HeaderAppendAction) String() string {
	return v3corepb.HeaderValueOption_HeaderAppendAction(a).String()
}

// RegexRewrite is a regex_rewrite (envoy RegexMatchAndSubstitute): every
// match of the pattern is replaced by the substitution, in which \0 is
// the match and \1 to \9 its groups (RE2's rewrite syntax).
type RegexRewrite struct {
	// Regex is the pattern, compiled without anchors. Safe for
	// concurrent use.
	Regex *regexp.Regexp
	// Substitution is substitution, as received.
	Substitution string
	// template is Substitution in regexp.Expand's syntax.
	template string
}

// Replace returns s with every match of the pattern replaced.
func (r *RegexRewrite) Replace(s string) string {
	return r.Regex.ReplaceAllString(s, r.template)
}

// NewRegexRewrite returns the RegexRewrite of rr as Decode makes it for a
// route's regex_rewrite: the pattern compiled (RE2, at most the program
// size Decode allows) and the substitution's \N capture groups checked
// against it. Its errors name the field (pattern.regex, substitution).
func NewRegexRewrite(rr *v3matcherpb.RegexMatchAndSubstitute) (*RegexRewrite, error) {
	return regexRewriteFromProto(rr)
}

// regexRewriteFromProto converts a RegexMatchAndSubstitute whose
// substitution uses RE2's rewrite syntax (\N, \\), checked as RE2 checks
// it: a backslash is followed by a digit or a backslash, and a group
// number is at most the pattern's number of groups. Error fields are
// relative to it.
func regexRewriteFromProto(rr *v3matcherpb.RegexMatchAndSubstitute) (*RegexRewrite, error) {
	re, err := rewriteRegexFromProto(rr)
	if err != nil {
		return nil, err
	}
	sub := rr.GetSubstitution()
	var t strings.Builder
	for i := 0; i < len(sub); i++ {
		c := sub[i]
		switch {
		case c == '$':
			t.WriteString("$$")
		case c != '\\':
			t.WriteByte(c)
		case i+1 < len(sub) && sub[i+1] == '\\':
			t.WriteByte('\\')
			i++
		case i+1 < len(sub) && '0' <= sub[i+1] && sub[i+1] <= '9':
			n := int(sub[i+1] - '0')
			if n > re.NumSubexp() {
				return nil, invalid("substitution", "%q refers to group \\%d, the pattern has %d", sub, n, re.NumSubexp())
			}
			t.WriteString("${" + strconv.Itoa(n) + "}")
			i++
		default:
			return nil, invalid("substitution", "%q: a backslash must be followed by a digit or a backslash", sub)
		}
	}
	return &RegexRewrite{Regex: re, Substitution: sub, template: t.String()}, nil
}

// queryParametersFromProto converts query_parameters; error fields are
// relative to the RouteMatch.
func queryParametersFromProto(qs []*v3routepb.QueryParameterMatcher) ([]QueryParameterMatcher, error) {
	out := make([]QueryParameterMatcher, len(qs))
	for i, q := range qs {
		field := indexed("query_parameters", i)
		if q.GetName() == "" {
			return nil, invalid(field+".name", "empty")
		}
		out[i].Name = q.GetName()
		if sm := q.GetStringMatch(); sm != nil {
			v, err := stringMatcherFromProto(sm)
			if err != nil {
				return nil, withFieldPrefix(field+".string_match", err)
			}
			out[i].Value = v
		}
	}
	return out, nil
}

// headerMutationsFromProto converts the four header lists of a level;
// nil when all are empty. Error fields are relative to the level's
// message.
func headerMutationsFromProto(reqAdd []*v3corepb.HeaderValueOption, reqRemove []string, respAdd []*v3corepb.HeaderValueOption, respRemove []string) (*HeaderMutations, error) {
	if len(reqAdd) == 0 && len(reqRemove) == 0 && len(respAdd) == 0 && len(respRemove) == 0 {
		return nil, nil
	}
	out := &HeaderMutations{}
	var err error
	if out.RequestHeadersToAdd, err = headerOptionsFromProto("request_headers_to_add", reqAdd); err != nil {
		return nil, err
	}
	if out.RequestHeadersToRemove, err = headersToRemove("request_headers_to_remove", reqRemove); err != nil {
		return nil, err
	}
	if out.ResponseHeadersToAdd, err = headerOptionsFromProto("response_headers_to_add", respAdd); err != nil {
		return nil, err
	}
	if out.ResponseHeadersToRemove, err = headersToRemove("response_headers_to_remove", respRemove); err != nil {
		return nil, err
	}
	return out, nil
}

// checkModifiable rejects a header name Envoy does not let a route add or
// remove: empty, a pseudo-header, "host", or one with a character a
// header name cannot hold.
func checkModifiable(field, name string) error {
	switch {
	case name == "":
		return invalid(field, "empty header name")
	case name[0] == ':' || name == "host":
		return invalid(field, "%q: pseudo-headers and host cannot be modified", name)
	case strings.ContainsAny(name, "\x00\r\n"):
		return invalid(field, "%q is not a valid header name", name)
	}
	return nil
}

func headersToRemove(field string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		n = strings.ToLower(n)
		if err := checkModifiable(indexed(field, i), n); err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func headerOptionsFromProto(field string, opts []*v3corepb.HeaderValueOption) ([]HeaderValueOption, error) {
	if len(opts) == 0 {
		return nil, nil
	}
	out := make([]HeaderValueOption, len(opts))
	for i, o := range opts {
		f := indexed(field, i)
		h := o.GetHeader()
		if h == nil {
			return nil, invalid(f+".header", "missing")
		}
		name := strings.ToLower(h.GetKey())
		if err := checkModifiable(f+".header.key", name); err != nil {
			return nil, err
		}
		v := h.GetValue()
		if raw := h.GetRawValue(); len(raw) > 0 {
			v = string(raw)
		}
		if strings.ContainsAny(v, "\x00\r\n") {
			return nil, invalid(f+".header", "the value of %q has a NUL, CR or LF", name)
		}
		hv := HeaderValueOption{Name: name, Value: strings.ReplaceAll(v, "%%", "%"), Action: HeaderAppendAction(o.GetAppendAction()), KeepEmptyValue: o.GetKeepEmptyValue()}
		if hv.Action > OverwriteIfExists {
			return nil, invalid(f+".append_action", "unknown action %d", o.GetAppendAction())
		}
		//lint:ignore SA1019 Envoy still reads the deprecated append when append_action is unset.
		if ap := o.GetAppend(); ap != nil {
			if o.GetAppendAction() != v3corepb.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD {
				// As Envoy: the two cannot be given together.
				return nil, invalid(f, "both append and append_action are set")
			}
			if !ap.GetValue() {
				hv.Action = OverwriteIfExistsOrAdd
			}
		}
		out[i] = hv
	}
	return out, nil
}

// httpHashPoliciesFromProto converts the hash policies an HTTP data plane
// uses: header, cookie, connection_properties.source_ip and
// query_parameter; filter_state policies and source_ip false are left
// out. Error fields are relative to the RouteAction. It returns nil when
// no policy is kept.
func httpHashPoliciesFromProto(hps []*v3routepb.RouteAction_HashPolicy) ([]HashPolicy, error) {
	var out []HashPolicy
	for i, hp := range hps {
		field := indexed("hash_policy", i)
		p := HashPolicy{Terminal: hp.GetTerminal()}
		switch ps := hp.GetPolicySpecifier().(type) {
		case *v3routepb.RouteAction_HashPolicy_Header_:
			p.Kind, p.HeaderName = HashPolicyHeader, ps.Header.GetHeaderName()
			if p.HeaderName == "" {
				return nil, invalid(field+".header.header_name", "empty")
			}
			if rr := ps.Header.GetRegexRewrite(); rr != nil {
				re, err := rewriteRegexFromProto(rr)
				if err != nil {
					return nil, withFieldPrefix(field+".header.regex_rewrite", err)
				}
				p.RegexRewrite, p.RegexRewritePattern, p.RegexSubstitution = re, rr.GetPattern().GetRegex(), rr.GetSubstitution()
			}
		case *v3routepb.RouteAction_HashPolicy_Cookie_:
			p.Kind, p.Name = HashPolicyCookie, ps.Cookie.GetName()
			if p.Name == "" {
				return nil, invalid(field+".cookie.name", "empty")
			}
		case *v3routepb.RouteAction_HashPolicy_ConnectionProperties_:
			if !ps.ConnectionProperties.GetSourceIp() {
				continue
			}
			p.Kind = HashPolicySourceIP
		case *v3routepb.RouteAction_HashPolicy_QueryParameter_:
			p.Kind, p.Name = HashPolicyQueryParameter, ps.QueryParameter.GetName()
			if p.Name == "" {
				return nil, invalid(field+".query_parameter.name", "empty")
			}
		default:
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// httpRouteActionFromProto converts the HTTP fields of a RouteAction into
// out; error fields are relative to the RouteAction.
func httpRouteActionFromProto(out *RouteAction, a *v3routepb.RouteAction, durs *durationSlab) error {
	if t := a.GetTimeout(); t != nil {
		v, err := duration("timeout", t)
		if err != nil {
			return err
		}
		out.Timeout = durs.new(v)
	}
	out.PrefixRewrite = a.GetPrefixRewrite()
	if rr := a.GetRegexRewrite(); rr != nil {
		if out.PrefixRewrite != "" {
			return invalid("regex_rewrite", "set with prefix_rewrite; only one may be")
		}
		var err error
		if out.RegexRewrite, err = regexRewriteFromProto(rr); err != nil {
			return withFieldPrefix("regex_rewrite", err)
		}
	}
	out.HostRewriteLiteral = a.GetHostRewriteLiteral()
	if hps := a.GetHashPolicy(); len(hps) > 0 {
		var err error
		if out.HTTPHashPolicies, err = httpHashPoliciesFromProto(hps); err != nil {
			return err
		}
	}
	return nil
}

// httpRetryFromProto converts the HTTP fields of a RetryPolicy into out;
// error fields are relative to the RetryPolicy.
func httpRetryFromProto(out *RetryPolicy, rp *v3routepb.RetryPolicy) error {
	for s := range strings.SplitSeq(rp.GetRetryOn(), ",") {
		out.HTTPRetryOn |= httpRetryOn(strings.ToLower(strings.TrimSpace(s)))
	}
	if codes := rp.GetRetriableStatusCodes(); len(codes) > 0 {
		out.RetriableStatusCodes = codes
	}
	var err error
	if out.RetriableHeaders, err = headerMatchersFromProto("retriable_headers", rp.GetRetriableHeaders()); err != nil {
		return err
	}
	if out.RetriableRequestHeaders, err = headerMatchersFromProto("retriable_request_headers", rp.GetRetriableRequestHeaders()); err != nil {
		return err
	}
	if pt := rp.GetPerTryTimeout(); pt != nil {
		if out.PerTryTimeout, err = duration("per_try_timeout", pt); err != nil {
			return err
		}
	}
	return nil
}

func headerMatchersFromProto(field string, hs []*v3routepb.HeaderMatcher) ([]HeaderMatcher, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make([]HeaderMatcher, len(hs))
	for i, h := range hs {
		hm, err := headerMatcherFromProto(h)
		if err != nil {
			return nil, withFieldPrefix(indexed(field, i), err)
		}
		out[i] = hm
	}
	return out, nil
}

// httpRouteTimeoutDefault is Envoy's route timeout when timeout is unset.
const httpRouteTimeoutDefault = 15 * time.Second

// RouteTimeout returns the timeout of the route's requests on an HTTP
// data plane: Timeout, else Envoy's default of 15 s; 0 means none.
func (a *RouteAction) RouteTimeout() time.Duration {
	if a.Timeout != nil {
		return *a.Timeout
	}
	return httpRouteTimeoutDefault
}
