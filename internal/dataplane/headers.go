// SPDX-License-Identifier: Apache-2.0

package dataplane

import "github.com/proxyless/xds/resources"

// Header mutations: request_headers_to_add / _to_remove and
// response_headers_to_add / _to_remove of a weighted cluster, a route,
// its virtual host and its RouteConfiguration, applied as Envoy's router
// applies them (docs/http.md, "Header mutations"). Build gathers, for each
// route and each of its targets, the levels that apply, in the order they
// apply (Target.MutationsFor); the data path applies them to a request
// with ApplyRequestMutations, and to its response with
// ApplyResponseMutations, the same way for every data path. A request of
// a route without mutations does no work and allocates nothing.

// HeaderSet is what header mutations change: the headers of one request
// or one response. Names are given lowercase; an implementation may
// canonicalise them (http.Header satisfies HeaderSet as it is; the gRPC
// path adapts its metadata).
type HeaderSet interface {
	// Values returns the values of the header name; none when absent.
	Values(name string) []string
	// Set replaces every value of the header name with value.
	Set(name, value string)
	// Add adds value to the values of the header name.
	Add(name, value string)
	// Del removes the header name.
	Del(name string)
}

// ApplyRequestMutations applies the request header mutations of levels
// (Target.MutationsFor's first result) to h. Not safe for concurrent use
// with other uses of h.
func ApplyRequestMutations(levels []*resources.HeaderMutations, h HeaderSet) {
	for _, m := range levels {
		applyLevel(h, m.RequestHeadersToRemove, m.RequestHeadersToAdd)
	}
}

// ApplyResponseMutations applies the response header mutations of levels
// (Target.MutationsFor's second result) to h.
func ApplyResponseMutations(levels []*resources.HeaderMutations, h HeaderSet) {
	for _, m := range levels {
		applyLevel(h, m.ResponseHeadersToRemove, m.ResponseHeadersToAdd)
	}
}

// applyLevel applies one level as Envoy's HeaderParser::evaluateHeaders
// does: the removals first; then which additions apply is decided on the
// headers as the removals left them (an empty value is dropped unless
// keep_empty_value; ADD_IF_ABSENT needs the header absent,
// OVERWRITE_IF_EXISTS present), before any of the level's additions is
// made; then the overwriting ones are made, in order, and then the
// appending ones, in order.
func applyLevel(h HeaderSet, remove []string, add []resources.HeaderValueOption) {
	for _, name := range remove {
		h.Del(name)
	}
	if len(add) == 0 {
		return
	}
	var applies bitSet
	if len(add) > 64 {
		applies.more = make([]bool, len(add))
	}
	for i := range add {
		o := &add[i]
		ok := o.Value != "" || o.KeepEmptyValue
		switch {
		case !ok:
		case o.Action == resources.AddIfAbsent:
			ok = len(h.Values(o.Name)) == 0
		case o.Action == resources.OverwriteIfExists:
			ok = len(h.Values(o.Name)) > 0
		}
		if ok {
			applies.set(i)
		}
	}
	for i := range add {
		if o := &add[i]; applies.has(i) && overwrites(o.Action) {
			h.Set(o.Name, o.Value)
		}
	}
	for i := range add {
		if o := &add[i]; applies.has(i) && !overwrites(o.Action) {
			h.Add(o.Name, o.Value)
		}
	}
}

func overwrites(a resources.HeaderAppendAction) bool {
	return a == resources.OverwriteIfExistsOrAdd || a == resources.OverwriteIfExists
}

// bitSet is a set of small integers: in a word up to 64, in more beyond.
type bitSet struct {
	word uint64
	more []bool
}

func (b *bitSet) set(i int) {
	if b.more != nil {
		b.more[i] = true
	} else {
		b.word |= 1 << i
	}
}

func (b *bitSet) has(i int) bool {
	if b.more != nil {
		return b.more[i]
	}
	return b.word&(1<<i) != 0
}

// headerChain is what Build knows of the header mutations of a virtual
// host's routes: the adapted levels of the RouteConfiguration and the
// virtual host, and how to adapt the others.
type headerChain struct {
	adapter          func(*resources.HeaderMutations) *resources.HeaderMutations // Options.HeaderMutations
	vh, rc           *resources.HeaderMutations
	mostSpecificWins bool
}

// adapt returns m as the data path applies it (Options.HeaderMutations).
func (hc *headerChain) adapt(m *resources.HeaderMutations) *resources.HeaderMutations {
	if m == nil || hc.adapter == nil {
		return m
	}
	return hc.adapter(m)
}

// levels returns the levels of a route whose own are route, sent to a
// weighted cluster whose own are wc (nil for none).
func (hc *headerChain) levels(wc, route *resources.HeaderMutations) (req, resp []*resources.HeaderMutations) {
	return mutationLevels(wc, route, hc.vh, hc.rc, hc.mostSpecificWins)
}

// mutationLevels returns the levels of header mutations that apply to the
// requests and responses of a route: wc (the weighted cluster's), then,
// from the most specific, route, vh and rc (the route's, its virtual
// host's, its RouteConfiguration's), or from the least specific when
// mostSpecificWins (most_specific_header_mutations_wins). As Envoy's
// router does, the weighted cluster's come first either way (its
// WeightedClusterEntry applies its own, then the route's chain). Each
// result holds only the levels with mutations of its kind; nil when none.
func mutationLevels(wc, route, vh, rc *resources.HeaderMutations, mostSpecificWins bool) (req, resp []*resources.HeaderMutations) {
	chain := [4]*resources.HeaderMutations{wc, route, vh, rc}
	if mostSpecificWins {
		chain[1], chain[3] = rc, route
	}
	for _, m := range chain {
		if m == nil {
			continue
		}
		if len(m.RequestHeadersToAdd) > 0 || len(m.RequestHeadersToRemove) > 0 {
			req = append(req, m)
		}
		if len(m.ResponseHeadersToAdd) > 0 || len(m.ResponseHeadersToRemove) > 0 {
			resp = append(resp, m)
		}
	}
	return req, resp
}

// MutationsFor returns the header mutations of the requests of rt sent to
// t, and of their responses, in the order they apply: t's weighted
// cluster's, then the route's, its virtual host's and its
// RouteConfiguration's (ApplyRequestMutations, ApplyResponseMutations).
// t may be nil (a route that does not forward, or whose cluster a plugin
// chooses): then rt's, without a weighted cluster's.
func (t *Target) MutationsFor(rt *Route) (req, resp []*resources.HeaderMutations) {
	if t != nil {
		return t.RequestMutations, t.ResponseMutations
	}
	return rt.RequestMutations, rt.ResponseMutations
}
