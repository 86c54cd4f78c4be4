// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/proxyless/xds/internal/asciifold"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdsresolver/internal/router"
)

// Retries (gRFC A44) are gRPC's own (gRFC A6): the resolver gives the
// channel, in its service config, a method config with a retryPolicy for
// the methods whose routes have one, so that grpc retries the RPCs with
// A6's semantics (no retry once response headers came, the retry buffer
// limit, grpc-previous-rpc-attempts, server pushback, each attempt picked
// again by the router). gRPC's xDS channel hands the policy of the
// matched route per RPC through a config selector internal to grpc; a
// service config can only name methods. So the routes are mapped onto
// method names: the policy of a method is that of the routes that can
// match its RPCs. When RPCs of one method can match routes with different
// policies (the routes differ by headers, runtime_fraction, a regex or a
// prefix that is not a whole service), the method gets no retry policy,
// and the resolver logs which routes conflict; except that, with
// DialOptions' interceptors, when the only difference is that some of the
// routes have none, the method gets the policy, and the interceptors
// turn retries off for the RPCs of the routes without one
// (grpc.MaxRetryRPCBufferSize(0): grpc commits an RPC whose sent messages
// exceed the retry buffer, and every message exceeds 0 bytes).
//
// That is path A. With DialOptions there is a path B: the routes whose
// policy the service config does not give every method they can match
// (retryClasses' unexpressed) are retried by the interceptors, per RPC,
// when the RPC's method has another policy in the service config
// (methodPolicy), with the route's own (package rpcretry), and grpc's
// retries are off for the RPC.

// retryKey is a policy as grpc's service config reads it (its JSON), ""
// for none. anyPolicy marks a route whose RPCs fail before any attempt
// (non_forwarding, unsupported actions): as gRPC never retries a pick's
// error, its policy does not matter.
type retryKey = string

const anyPolicy retryKey = "\x00any"

// jsonRetryPolicy is a retryPolicy of gRPC's service config (gRFC A6),
// from an xDS RetryPolicy as gRFC A44 converts it.
type jsonRetryPolicy struct {
	MaxAttempts          uint32  `json:"maxAttempts"`
	InitialBackoff       string  `json:"initialBackoff"`
	MaxBackoff           string  `json:"maxBackoff"`
	BackoffMultiplier    float64 `json:"backoffMultiplier"`
	RetryableStatusCodes []int   `json:"retryableStatusCodes"`
}

// retryPolicyJSON returns the service config form of p: maxAttempts
// num_retries + 1 (grpc caps it at its channel's WithMaxCallAttempts, 5
// by default), the base and max intervals as initial and max backoff,
// multiplier 2, the retry_on codes. "" when p is nil or retries no code
// (A44: "gRPC xDS client will not include a retry policy").
func retryPolicyJSON(p *resources.RetryPolicy) retryKey {
	if p == nil || len(p.RetryOn) == 0 {
		return ""
	}
	j := jsonRetryPolicy{
		MaxAttempts:       p.NumRetries + 1,
		InitialBackoff:    jsonDuration(p.BaseInterval),
		MaxBackoff:        jsonDuration(p.MaxInterval),
		BackoffMultiplier: 2,
	}
	for _, c := range p.RetryOn {
		j.RetryableStatusCodes = append(j.RetryableStatusCodes, int(c))
	}
	b, err := json.Marshal(j)
	if err != nil { // cannot happen: plain fields
		return ""
	}
	return string(b)
}

// routePolicy returns the retry policy of the RPCs of rt: the route's,
// else the virtual host's.
func routePolicy(rt *dataplane.Route, vh *resources.VirtualHost) retryKey {
	if !rt.Forwards() && rt.Action != resources.RouteActionClusterSpecifierPlugin {
		return anyPolicy
	}
	return retryPolicyJSON(routeRetryPolicy(rt, vh))
}

// routeRetryPolicy returns the retry policy of rt: its own, else vh's
// (gRFC A44); nil for none.
func routeRetryPolicy(rt *dataplane.Route, vh *resources.VirtualHost) *resources.RetryPolicy {
	if p := rt.Res.Action.RetryPolicy; p != nil || vh == nil {
		return p
	}
	return vh.RetryPolicy
}

// methodClass is a set of methods that a service config entry names:
// one method ("/S/M"), the other methods of a service ("/S/"), or every
// other method ("").
type methodClass struct {
	key     string // the path grpc looks up: "/S/M", "/S/" or ""
	service string // S, for the two first kinds
	method  string // M, for the first
	policy  retryKey
}

// match says whether a route's path matches every method of a class,
// none, or some.
type match int

const (
	matchNone match = iota
	matchSome
	matchAll
)

// splitMethod returns S and M of a path "/S/M" (both non-empty, no other
// '/'); ok is false for other paths.
func splitMethod(path string) (service, method string, ok bool) {
	if len(path) < 4 || path[0] != '/' {
		return "", "", false
	}
	service, method, ok = strings.Cut(path[1:], "/")
	if !ok || service == "" || method == "" || strings.Contains(method, "/") {
		return "", "", false
	}
	return service, method, true
}

// serviceOf returns S of a prefix "/S/…"; ok is false when the prefix
// does not name a whole service.
func serviceOf(prefix string) (string, bool) {
	if len(prefix) < 3 || prefix[0] != '/' {
		return "", false
	}
	s, _, ok := strings.Cut(prefix[1:], "/")
	return s, ok && s != ""
}

// pathMatch says whether the path of route m matches all, none or some of
// the methods of class c, given the services that have a class of their
// own (services) and the methods that do (methods).
func pathMatch(m *resources.RouteMatch, c *methodClass, services, methods map[string]bool) match {
	if m.PathKind == resources.PathKindSafeRegex {
		if c.method != "" {
			if m.Regex != nil && m.Regex.MatchString(c.key) {
				return matchAll
			}
			return matchNone
		}
		return matchSome
	}
	hasPrefix, equal := strings.HasPrefix, func(a, b string) bool { return a == b }
	if !m.CaseSensitive {
		hasPrefix, equal = asciifold.HasPrefix, asciifold.Equal
	}
	switch {
	case c.method != "": // one method: decided on its path
		if m.PathKind == resources.PathKindPath && equal(c.key, m.Path) || m.PathKind == resources.PathKindPrefix && hasPrefix(c.key, m.Prefix) {
			return matchAll
		}
		return matchNone
	case c.service != "": // "/S/x" for every x without a class
		if m.PathKind == resources.PathKindPath {
			if s, meth, ok := splitMethod(m.Path); ok && m.CaseSensitive && (s != c.service || methods["/"+s+"/"+meth]) {
				return matchNone
			}
			if hasPrefix(m.Path, c.key) {
				return matchSome
			}
			return matchNone
		}
		switch {
		case hasPrefix(c.key, m.Prefix):
			return matchAll
		case hasPrefix(m.Prefix, c.key):
			return matchSome
		case m.CaseSensitive:
			return matchNone
		}
		return matchSome // another case of S
	default: // every method of a service without a class, but the methods with one
		if m.PathKind == resources.PathKindPath {
			if _, _, ok := splitMethod(m.Path); ok && m.CaseSensitive {
				return matchNone // its method has a class
			}
			return matchSome
		}
		if m.Prefix == "" || m.Prefix == "/" {
			return matchAll
		}
		if s, ok := serviceOf(m.Prefix); ok && m.CaseSensitive && services[s] {
			return matchNone // its service has a class
		}
		return matchSome
	}
}

// retryClasses maps the retry policies of routes (retry, by route index)
// onto method classes (see the comment at the top of this file);
// canDisable says that RPCs of routes without a policy are not retried
// whatever their method's policy (DialOptions' interceptors). It returns
// the classes, most specific first, and the routes whose policies
// conflict, for the log; nil classes when no route has a retry policy.
//
// unexpressed, by route index, marks the routes whose policy is not that
// of every class of methods whose RPCs can reach them: their RPCs of those
// methods are retried per RPC by DialOptions' interceptors (package
// rpcretry), or, without them, not at all; nil when every route's policy
// is expressed.
func retryClasses(routes []dataplane.Route, retry []retryKey, canDisable bool) (classes []methodClass, conflicts []string, unexpressed []bool) {
	some := false
	for _, p := range retry {
		some = some || (p != "" && p != anyPolicy)
	}
	if !some {
		return nil, nil, nil
	}
	services, methods := map[string]bool{}, map[string]bool{}
	for i := range routes {
		m := &routes[i].Res.Match
		switch m.PathKind {
		case resources.PathKindPath:
			if s, meth, ok := splitMethod(m.Path); ok {
				if !methods["/"+s+"/"+meth] {
					methods["/"+s+"/"+meth] = true
					classes = append(classes, methodClass{key: "/" + s + "/" + meth, service: s, method: meth})
				}
				services[s] = true
			}
		case resources.PathKindPrefix:
			if s, ok := serviceOf(m.Prefix); ok {
				services[s] = true
			}
		}
	}
	for _, s := range slices.Sorted(mapKeys(services)) {
		classes = append(classes, methodClass{key: "/" + s + "/", service: s})
	}
	classes = append(classes, methodClass{})
	conflicting := map[string]bool{}
	for ci := range classes {
		c := &classes[ci]
		var (
			candidates []int
			policy     = anyPolicy
			conflict   bool
		)
		for i := range routes {
			rm := &routes[i].Res.Match
			pm := pathMatch(rm, c, services, methods)
			if pm == matchNone {
				continue
			}
			candidates = append(candidates, i)
			switch p := retry[i]; {
			case p == anyPolicy, p == policy:
			case policy == anyPolicy:
				policy = p
			case canDisable && p == "":
			case canDisable && policy == "":
				policy = p
			default:
				conflict = true
			}
			if pm == matchAll && len(rm.Headers) == 0 && (rm.FractionPerMillion == nil || *rm.FractionPerMillion >= 1_000_000) {
				break // every RPC of the class that reaches this route matches it
			}
		}
		if conflict {
			for _, i := range candidates {
				conflicting[routes[i].Desc] = true
			}
			policy = ""
		}
		if policy == anyPolicy {
			policy = ""
		}
		c.policy = policy
		for _, i := range candidates {
			if p := retry[i]; p != "" && p != anyPolicy && p != policy {
				if unexpressed == nil {
					unexpressed = make([]bool, len(routes))
				}
				unexpressed[i] = true
			}
		}
	}
	return classes, slices.Sorted(mapKeys(conflicting)), unexpressed
}

// methodPolicy returns the retry policy of method ("/S/M") in classes
// (by class key), as grpc looks it up in the service config: the
// method's, else its service's, else the default. It allocates nothing.
func methodPolicy(classes map[string]retryKey, method string) retryKey {
	if p, ok := classes[method]; ok {
		return p
	}
	if i := strings.LastIndexByte(method, '/'); i > 0 {
		if p, ok := classes[method[:i+1]]; ok {
			return p
		}
	}
	return classes[""]
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// serviceConfigJSON returns the service config the resolver gives the
// channel: the router, and the method configs of classes (from
// retryClasses), leaving out those whose policy is the one grpc would
// find anyway (their service's class, else the default).
func serviceConfigJSON(classes []methodClass) string {
	if len(classes) == 0 {
		return router.ServiceConfig
	}
	byKey := make(map[string]retryKey, len(classes))
	for _, c := range classes {
		byKey[c.key] = c.policy
	}
	var b strings.Builder
	b.WriteString(`{"loadBalancingConfig":[{"` + router.Name + `":{}}],"methodConfig":[`)
	first := true
	for _, c := range classes {
		fallback, ok := retryKey(""), false
		switch {
		case c.method != "":
			if fallback, ok = byKey["/"+c.service+"/"]; !ok {
				fallback, ok = byKey[""]
			}
		case c.service != "":
			fallback, ok = byKey[""]
		}
		if ok && fallback == c.policy || c.key == "" && c.policy == "" {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		name, _ := json.Marshal(struct {
			Service string `json:"service,omitempty"`
			Method  string `json:"method,omitempty"`
		}{c.service, c.method})
		fmt.Fprintf(&b, `{"name":[%s]`, name)
		if c.policy != "" {
			fmt.Fprintf(&b, `,"retryPolicy":%s`, c.policy)
		}
		b.WriteByte('}')
	}
	if first {
		return router.ServiceConfig // every method's policy is none
	}
	b.WriteString("]}")
	return b.String()
}
