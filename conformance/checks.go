// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Sources of the rules: sections of the xDS protocol text.
const (
	srcOverview   = `xDS protocol, "Basic Protocol Overview"`
	srcWildcard   = `xDS protocol, "How the client specifies what resources to return"`
	srcNames      = `xDS protocol, "How the client specifies what resources to return"; "Subscribing to Resources"`
	srcUnsub      = `xDS protocol, "Unsubscribing From Resources"`
	srcGrouping   = `xDS protocol, "Grouping Resources into Responses"`
	srcWhen       = `xDS protocol, "When to send an update"`
	srcACKNACK    = `xDS protocol, "ACK/NACK and resource type instance version"`
	srcStale      = `xDS protocol, "Resource updates"; "Incremental xDS"`
	srcDeleting   = `xDS protocol, "Deleting Resources"; "Knowing When a Requested Resource Does Not Exist"`
	srcDeltaUnsub = `xDS protocol, "Unsubscribing from Resources" (incremental)`
	srcReconnect  = `xDS protocol, "Incremental xDS" (reconnect, initial_resource_versions)`
	srcMissing    = `xDS protocol, "Knowing When a Requested Resource Does Not Exist" (incremental)`
	srcDuplicate  = `xDS protocol, "Duplicate Resource Names"`
	srcTypes      = `xDS protocol, "Resource Types"; "Aggregated Discovery Service"`
	srcSize       = `gRPC's default receive limit (4 MiB)`
)

var (
	allVariants  = Variants()
	grpcVariants = []Variant{SotW, Delta, SotWPerType, DeltaPerType}
	deltaOnly    = []Variant{Delta, DeltaPerType}
)

// checks are the checks of the kit, most valuable first (Catalog).
var checks = []*check{
	{CheckInfo: CheckInfo{
		Name:    "explicit_wildcard",
		Summary: `A request for Listener or Cluster with exactly "*" is answered with every resource of the type, as the legacy wildcard is.`,
		Rule:    "R-28.2", Source: srcWildcard, Variants: allVariants,
	}, run: checkExplicitWildcard(false)},
	{CheckInfo: CheckInfo{
		Name:    "explicit_wildcard_with_names",
		Summary: `A request for Listener or Cluster with "*" and a name is answered with every resource of the type.`,
		Rule:    "R-28.2", Source: srcWildcard, Variants: allVariants,
	}, run: checkExplicitWildcard(true)},
	{CheckInfo: CheckInfo{
		Name:    "subset_subscription",
		Summary: "A request naming one resource of a type that has several is answered with exactly that resource, for every type.",
		Rule:    "R-28.3", Source: srcNames, Variants: allVariants,
	}, run: checkSubset},
	{CheckInfo: CheckInfo{
		Name:    "nack_not_resent",
		Summary: "A NACKed response is not sent again: no response with the NACKed version (delta: the NACKed resources at their versions) follows.",
		Rule:    "R-28.5", Source: srcWhen, Variants: grpcVariants,
	}, run: checkNACKNotResent},
	{CheckInfo: CheckInfo{
		Name:    "resubscribe",
		Summary: "Resources unsubscribed and subscribed again are sent again, although they did not change.",
		Rule:    "R-28.3", Source: srcNames, Variants: grpcVariants,
	}, run: checkResubscribe},
	{CheckInfo: CheckInfo{
		Name:    "wildcard_name_unsubscribed",
		Summary: `With "*" and names subscribed, unsubscribing a name brings it back in resources when the wildcard covers it and in removed_resources when it does not exist.`,
		Rule:    "R-28.9", Source: srcDeltaUnsub, Variants: deltaOnly,
	}, run: checkWildcardNameUnsubscribed},
	{CheckInfo: CheckInfo{
		Name:    "initial_resource_versions",
		Summary: "A first request with initial_resource_versions gets only the resources whose version differs, and the subscribed names that do not exist in removed_resources.",
		Rule:    "R-28.9", Source: srcReconnect, Variants: deltaOnly,
	}, run: checkInitialVersions},
	{CheckInfo: CheckInfo{
		Name:    "stale_nonce",
		Summary: "SotW: a request carrying a stale nonce is not answered (it asks for a name more, or, where the server cannot be asked for a subset, it is behind a change made with Config.Change). Delta: the subscription change of a request with a stale nonce still applies.",
		Rule:    "R-28.8", Source: srcStale, Variants: grpcVariants,
	}, run: checkStaleNonce, sequential: true},
	{CheckInfo: CheckInfo{
		Name:    "first_request_answered",
		Summary: "The first request of each type on a stream, naming resources that exist, is answered with all of them.",
		Rule:    "R-28.1", Source: srcOverview, Variants: allVariants,
	}, run: checkFirstRequest},
	{CheckInfo: CheckInfo{
		Name:    "ack_not_answered",
		Summary: "An ACK is not answered with the version it ACKs (REST: a poll carrying the current version is not answered with it).",
		Rule:    "R-28.5", Source: srcWhen, Variants: allVariants,
	}, run: checkACKNotAnswered},
	{CheckInfo: CheckInfo{
		Name:    "nack_keeps_serving",
		Summary: "After a NACK the server keeps serving the stream: a request adding a name is answered, for Listener and Cluster with the NACKed resource again; where the server cannot be asked for a subset, a change after the NACK is sent as a new version (with Config.Change).",
		Rule:    "R-28.5", Source: srcACKNACK, Variants: grpcVariants,
	}, run: checkNACKKeepsServing, sequential: true},
	{CheckInfo: CheckInfo{
		Name:    "legacy_wildcard",
		Summary: "A first request for Listener or Cluster naming nothing (the legacy wildcard) is answered with every resource of the type.",
		Rule:    "R-28.2", Source: srcWildcard, Variants: allVariants,
	}, run: checkLegacyWildcard},
	{CheckInfo: CheckInfo{
		Name:    "empty_list_after_names",
		Summary: "Once a stream named resources of a type, unsubscribing from all of them is not a wildcard: a later change is not sent.",
		Rule:    "R-28.2", Source: srcWildcard, Variants: grpcVariants, NeedsChange: true,
	}, run: checkEmptyAfterNames, sequential: true},
	{CheckInfo: CheckInfo{
		Name:    "subscribe_added_name",
		Summary: "A request adding a name is answered with it; for Listener and Cluster with the whole subscription (complete state).",
		Rule:    "R-28.4", Source: srcGrouping, Variants: grpcVariants,
	}, run: checkAddName},
	{CheckInfo: CheckInfo{
		Name:    "unsubscribe",
		Summary: "After a name is unsubscribed, responses leave it out and a change of it is not sent.",
		Rule:    "R-28.3", Source: srcUnsub, Variants: grpcVariants, NeedsChange: true,
	}, run: checkUnsubscribe, sequential: true},
	{CheckInfo: CheckInfo{
		Name:    "update_pushed",
		Summary: "A change of a subscribed resource is sent without being asked, under a new version (REST: a poll with the old version gets the new one).",
		Rule:    "R-28.6", Source: srcACKNACK, Variants: allVariants, NeedsChange: true,
	}, run: checkUpdatePushed, sequential: true},
	{CheckInfo: CheckInfo{
		Name:    "resource_deleted",
		Summary: "A deleted resource disappears (SotW Listener and Cluster: left out of the next response; delta: removed_resources), and is sent again when it comes back.",
		Rule:    "R-28.7", Source: srcDeleting, Variants: allVariants, NeedsChange: true,
	}, run: checkDeleted, sequential: true},
	{CheckInfo: CheckInfo{
		Name:    "missing_resource_reported",
		Summary: "A subscribed resource that does not exist is named in removed_resources, for every type.",
		Rule:    "R-28.9", Source: srcMissing, Variants: deltaOnly,
	}, run: checkMissingReported},
	{CheckInfo: CheckInfo{
		Name:    "system_version_info",
		Summary: "When the server sends system_version_info (optional), it changes when a resource of the type changes.",
		Rule:    "R-28.6", Source: srcACKNACK, Variants: deltaOnly, NeedsChange: true,
	}, run: checkSystemVersion, sequential: true},
	{CheckInfo: CheckInfo{
		Name:    checkDuplicateNames,
		Summary: "No response of the run carries a resource name twice (delta: counting removed_resources).",
		Rule:    "R-28.10", Source: srcDuplicate, Variants: allVariants,
	}, responses: true},
	{CheckInfo: CheckInfo{
		Name:    checkResponseType,
		Summary: "Every response of the run is of a type requested on its stream, and its resources are of that type, decode and have names.",
		Rule:    "R-28.10", Source: srcTypes, Variants: allVariants,
	}, responses: true},
	{CheckInfo: CheckInfo{
		Name:    checkResponseNonce,
		Summary: "Every response of the run carries a nonce not used before on its stream.",
		Rule:    "R-28.8", Source: srcOverview, Variants: grpcVariants,
	}, responses: true},
	{CheckInfo: CheckInfo{
		Name:    checkResponseSize,
		Summary: "Every response of the run fits the receive limit (Config.MaxResponseBytes, 4 MiB by default).",
		Rule:    "R-28.10", Source: srcSize, Variants: allVariants,
	}, responses: true},
}

// problems collects what a check found wrong, one sentence each.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// outcome is fail with the problems, or pass with ok.
func (p problems) outcome(ok string, args ...any) outcome {
	if len(p) > 0 {
		return fail("%s", strings.Join(p, "; "))
	}
	return pass(ok, args...)
}

// get subscribes to sub of typeURL and returns what comes until the names
// received cover want, each response ACKed, within Config.Timeout. SotW:
// a request naming sub (nil: the legacy wildcard); delta: sub in
// resource_names_subscribe; REST (s nil): a poll naming sub.
func (r *run) get(s *session, typeURL string, sub, want []string) ([]*response, error) {
	if r.v == REST {
		pr, err := r.k.poll(r.ctx, typeURL, "", r.k.cfg.Timeout, sub...)
		switch {
		case err != nil:
			return nil, err
		case pr.resp == nil && pr.code == 0:
			return nil, fmt.Errorf("%w within %v", errNotAnswered, r.k.cfg.Timeout)
		case pr.resp == nil:
			return nil, fmt.Errorf("the poll was answered %d, not 200", pr.code)
		}
		return []*response{pr.resp}, nil
	}
	var err error
	if r.v.delta() {
		err = s.subscribe(typeURL, sub, nil)
	} else {
		err = s.sotw(typeURL, sub...)
	}
	if err != nil {
		return nil, err
	}
	return s.until(typeURL, true, func(got []*response) bool {
		return len(got) > 0 && covers(union(got), want)
	})
}

// notAnswered renders the error of a wait for a detail: "not answered
// within 5s", or why the stream ended.
func notAnswered(err error) string { return err.Error() }

func checkExplicitWildcard(withNames bool) func(r *run) outcome {
	return func(r *run) outcome {
		types := r.typesWith(1, wildcardTypes...)
		if len(types) == 0 {
			return skip("the server has no Listener or Cluster to work with")
		}
		var p problems
		var seen []string
		for _, t := range types {
			want := r.names(t)
			sub := []string{"*"}
			if withNames {
				sub = append(sub, want[0])
			}
			var s *session
			if r.v != REST {
				s = r.session()
			}
			got, err := r.get(s, t, sub, want)
			if err == nil && r.v.delta() {
				var more []*response
				more, err = s.settle(true, t)
				got = append(got, more...)
			}
			names := union(got)
			switch {
			case err != nil && len(got) == 0:
				p.add("%s %s: %s", typeName(t), nameList(sub), notAnswered(err))
			case !covers(names, want):
				p.add("%s %s: answered without %s (got %s)", typeName(t), nameList(sub), nameList(missing(names, want)), nameList(names))
			case r.k.wild[t] != nil && len(extra(names, r.k.wild[t])) > 0:
				p.add("%s %s: answered with %s, which the legacy wildcard does not return", typeName(t), nameList(sub), nameList(extra(names, r.k.wild[t])))
			default:
				seen = append(seen, fmt.Sprintf("%s: %d", typeName(t), len(names)))
			}
		}
		return p.outcome("answered with every resource (%s)", strings.Join(seen, ", "))
	}
}

func checkLegacyWildcard(r *run) outcome {
	types := r.typesWith(1, wildcardTypes...)
	if len(types) == 0 {
		return skip("the server has no Listener or Cluster to work with")
	}
	var p problems
	var seen []string
	for _, t := range types {
		var s *session
		if r.v != REST {
			s = r.session()
		}
		got, err := r.get(s, t, nil, r.names(t))
		names := union(got)
		switch {
		case err != nil && len(got) == 0:
			p.add("%s []: %s", typeName(t), notAnswered(err))
		case !covers(names, r.names(t)):
			p.add("%s []: answered without %s (got %s)", typeName(t), nameList(missing(names, r.names(t))), nameList(names))
		default:
			seen = append(seen, fmt.Sprintf("%s: %d", typeName(t), len(names)))
		}
	}
	return p.outcome("answered with every resource (%s)", strings.Join(seen, ", "))
}

func checkSubset(r *run) outcome {
	types := r.typesWith(1, builtinTypes...)
	if len(types) == 0 {
		return skip("the server has no resources to work with")
	}
	var s *session
	if r.v != REST {
		s = r.session()
	}
	var p problems
	var seen []string
	for _, t := range types {
		a := r.names(t)[0]
		got, err := r.get(s, t, []string{a}, []string{a})
		if err == nil && r.v.delta() {
			var more []*response
			more, err = s.settle(true, t)
			got = append(got, more...)
		}
		names := union(got)
		switch {
		case err != nil && len(got) == 0:
			p.add("%s [%s] (of %d): %s", typeName(t), a, len(r.names(t)), notAnswered(err))
		case !slices.Contains(names, a):
			p.add("%s [%s]: answered without it (got %s)", typeName(t), a, nameList(names))
		case len(names) > 1:
			p.add("%s [%s]: answered with unsubscribed %s", typeName(t), a, nameList(extra(names, []string{a})))
		default:
			seen = append(seen, fmt.Sprintf("%s: 1 of %d", typeName(t), len(r.names(t))))
		}
	}
	return p.outcome("answered with exactly the name subscribed (%s)", strings.Join(seen, ", "))
}

func checkFirstRequest(r *run) outcome {
	types := r.typesWith(1, builtinTypes...)
	if len(types) == 0 {
		return skip("the server has no resources to work with")
	}
	var s *session
	if r.v != REST {
		s = r.session()
	}
	var p problems
	var seen []string
	for _, t := range types {
		got, err := r.get(s, t, r.names(t), r.names(t))
		names := union(got)
		switch {
		case err != nil && len(got) == 0:
			p.add("%s %s: %s", typeName(t), nameList(r.names(t)), notAnswered(err))
		case !covers(names, r.names(t)):
			p.add("%s %s: answered without %s", typeName(t), nameList(r.names(t)), nameList(missing(names, r.names(t))))
		default:
			seen = append(seen, fmt.Sprintf("%s: %d", typeName(t), len(names)))
		}
	}
	return p.outcome("answered (%s)", strings.Join(seen, ", "))
}

// delivered returns, for delta responses, the version of every resource
// they carry, the latest winning.
func delivered(rs []*response) map[string]string {
	out := make(map[string]string)
	for _, r := range rs {
		for n, v := range r.versions {
			out[n] = v
		}
	}
	return out
}

// resends returns the names r carries at the version have says the
// client has (delta).
func resends(r *response, have map[string]string) []string {
	var out []string
	for _, n := range r.names {
		if v, ok := have[n]; ok && r.versions[n] == v {
			out = append(out, n)
		}
	}
	return out
}

func checkACKNotAnswered(r *run) outcome {
	types := r.typesWith(1, builtinTypes...)
	if len(types) == 0 {
		return skip("the server has no resources to work with")
	}
	if r.v == REST {
		var p problems
		for _, t := range types {
			first, err := r.get(nil, t, r.names(t), nil)
			if err != nil {
				return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
			}
			v := first[0].version
			pr, err := r.k.poll(r.ctx, t, v, r.k.cfg.Quiet, r.names(t)...)
			switch {
			case err != nil:
				p.add("%s: a poll with the current version_info %q: %v", typeName(t), v, err)
			case pr.resp != nil && pr.resp.version == v:
				p.add("%s: a poll with the current version_info %q was answered with that version again", typeName(t), v)
			}
		}
		return p.outcome("polls carrying the current version were answered 304, held, or with a new version")
	}
	s := r.session()
	have := make(map[string]map[string]string)
	for _, t := range types {
		got, err := r.get(s, t, r.names(t), r.names(t))
		if err != nil {
			return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
		}
		have[t] = delivered(got)
	}
	after, err := s.settle(false, types...)
	if err != nil {
		return fail("%v", err)
	}
	var p problems
	for _, a := range after {
		switch {
		case a.delta != nil && len(resends(a, have[a.typeURL])) > 0:
			p.add("%s: an ACK was answered with %s at the versions ACKed", typeName(a.typeURL), nameList(resends(a, have[a.typeURL])))
		case a.delta == nil && a.version == s.st(a.typeURL).version:
			p.add("%s: the ACK of version_info %q was answered with that version again", typeName(a.typeURL), a.version)
		}
	}
	return p.outcome("no response within %v of the ACKs (%d types)", r.k.cfg.Quiet, len(types))
}

func checkNACKNotResent(r *run) outcome {
	types := r.typesWith(1, builtinTypes...)
	if len(types) == 0 {
		return skip("the server has no resources to work with")
	}
	s := r.session()
	nacked := make(map[string]*response)
	for _, t := range types {
		var err error
		if r.v.delta() {
			err = s.subscribe(t, r.names(t), nil)
		} else {
			err = s.sotw(t, r.names(t)...)
		}
		if err != nil {
			return setupFailed(err)
		}
		first, err := s.next(t)
		if err != nil {
			return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
		}
		nacked[t] = first
		if err := s.nack(first); err != nil {
			return setupFailed(err)
		}
	}
	after, err := s.settle(false, types...)
	if err != nil {
		return fail("%v", err)
	}
	var p problems
	for _, a := range after {
		n := nacked[a.typeURL]
		switch {
		case a.delta != nil:
			if again := resends(a, delivered([]*response{n})); len(again) > 0 {
				p.add("%s: the NACKed %s sent again at the same versions", typeName(a.typeURL), nameList(again))
			}
		case a.version == n.version && len(intersect(a.names, n.names)) > 0:
			p.add("%s: the NACKed version_info %q sent again (%s)", typeName(a.typeURL), a.version, a.describe())
		}
	}
	return p.outcome("no NACKed response sent again within %v (%d types)", r.k.cfg.Quiet, len(types))
}

func checkResubscribe(r *run) outcome {
	types := r.typesWith(1, builtinTypes...)
	if len(types) == 0 {
		return skip("the server has no resources to work with")
	}
	s := r.session()
	for _, t := range types {
		if _, err := r.get(s, t, r.names(t), r.names(t)); err != nil {
			return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
		}
	}
	for _, t := range types {
		var err error
		if r.v.delta() {
			err = s.subscribe(t, nil, r.names(t))
		} else {
			err = s.sotw(t, absentName(t))
		}
		if err != nil {
			return setupFailed(err)
		}
	}
	if _, err := s.settle(true, types...); err != nil {
		return setupFailed(err)
	}
	var p problems
	for _, t := range types {
		got, err := r.get(s, t, r.names(t), r.names(t))
		if err != nil {
			p.add("%s %s subscribed again: %s (got %s)", typeName(t), nameList(r.names(t)), notAnswered(err), nameList(union(got)))
		}
	}
	return p.outcome("resources subscribed again were sent again (%d types)", len(types))
}

func checkAddName(r *run) outcome {
	t, ok := r.pick(2, preferred...)
	if !ok {
		return skip("needs a type with two resources")
	}
	a, b := r.names(t)[0], r.names(t)[1]
	s := r.session()
	if _, err := r.get(s, t, []string{a}, []string{a}); err != nil {
		return setupFailed(fmt.Errorf("%s [%s]: %w", typeName(t), a, err))
	}
	sub := []string{a, b}
	if r.v.delta() {
		sub = []string{b}
	}
	got, err := r.get(s, t, sub, []string{b})
	if err != nil {
		return fail("%s: adding %s: %s", typeName(t), b, notAnswered(err))
	}
	if !r.v.delta() && isWildcardType(t) {
		for _, g := range got {
			if g.has(b) && !g.has(a) {
				return fail("%s: the response that adds %s lacks %s, still subscribed: SotW %s responses hold the complete state (%s)", typeName(t), b, a, typeName(t), g.describe())
			}
		}
	}
	return pass("%s: adding %s to [%s] was answered with it", typeName(t), b, a)
}

func checkNACKKeepsServing(r *run) outcome {
	t, ok := r.pick(2, preferred...)
	if !ok {
		return nackThenChange(r, setupFailed(fmt.Errorf("needs a type with two resources")))
	}
	a, b := r.names(t)[0], r.names(t)[1]
	s := r.session()
	var err error
	if r.v.delta() {
		err = s.subscribe(t, []string{a}, nil)
	} else {
		err = s.sotw(t, a)
	}
	if err != nil {
		return setupFailed(err)
	}
	first, err := s.next(t)
	if err != nil {
		return nackThenChange(r, setupFailed(fmt.Errorf("%s [%s]: %w", typeName(t), a, err)))
	}
	if err := s.nack(first); err != nil {
		return setupFailed(err)
	}
	if _, err := s.settle(false, t); err != nil {
		return fail("after the NACK: %v", err)
	}
	if r.v.delta() {
		err = s.subscribe(t, []string{b}, nil)
	} else {
		err = s.sotw(t, a, b)
	}
	if err != nil {
		return fail("after the NACK: %v", err)
	}
	got, err := s.until(t, false, func(got []*response) bool { return covers(union(got), []string{b}) })
	if err != nil {
		return fail("%s: after a NACK, a request adding %s: %s", typeName(t), b, notAnswered(err))
	}
	if !r.v.delta() && isWildcardType(t) {
		for _, g := range got {
			if g.has(b) && !g.has(a) {
				return fail("%s: after a NACK of %s, the response adding %s lacks it: the client has not applied it, and SotW %s responses hold the complete state (%s)", typeName(t), a, b, typeName(t), g.describe())
			}
		}
	}
	return pass("%s: after a NACK, adding %s was answered", typeName(t), b)
}

// nackThenChange is nack_keeps_serving for a server that cannot be asked
// for a subset (or has one resource per type), with Config.Change: after
// a NACK of every resource of a type, a change is sent as a new version
// ("After a NACK, an API update may succeed at a new version Y"). Without
// Change it returns why not, which is why the names path failed.
func nackThenChange(r *run, why outcome) outcome {
	if r.k.cfg.Change == nil {
		return why
	}
	t, ok := r.pick(1, preferred...)
	if !ok {
		return why
	}
	ns := r.names(t)
	s := r.session()
	var err error
	if r.v.delta() {
		err = s.subscribe(t, ns, nil)
	} else {
		err = s.sotw(t, ns...)
	}
	if err != nil {
		return setupFailed(err)
	}
	first, err := s.next(t)
	if err != nil {
		return setupFailed(fmt.Errorf("%s %s: %w", typeName(t), nameList(ns), err))
	}
	if err := s.nack(first); err != nil {
		return setupFailed(err)
	}
	// Every response is answered, as a client does: the NACKed version
	// sent again (which nack_not_resent reports) is NACKed again.
	resent := 0
	answer := func(g *response) error {
		if g.delta == nil && g.version == first.version || g.delta != nil && len(resends(g, delivered([]*response{first}))) > 0 {
			resent++
			return s.nack(g)
		}
		return s.ack(g)
	}
	drained, err := s.settle(false, t)
	if err != nil {
		return fail("after the NACK: %v", err)
	}
	if len(drained) > 0 {
		if err := answer(drained[len(drained)-1]); err != nil {
			return fail("after the NACK: %v", err)
		}
	}
	if err := r.change(Update, t, ns[0]); err != nil {
		return fail("%v", err)
	}
	deadline := time.Now().Add(r.k.cfg.Timeout)
	for {
		g, err := s.wait(t, time.Until(deadline))
		switch {
		case err != nil:
			return fail("%s: after a NACK, waiting for a change of %s: %v", typeName(t), ns[0], err)
		case g == nil:
			return fail("%s: after a NACK, a change of %s was not sent within %v", typeName(t), ns[0], r.k.cfg.Timeout)
		case g.has(ns[0]) && (g.delta == nil && g.version != first.version || g.delta != nil && !g.hasVersion(ns[0], first.versions[ns[0]])):
			how := ""
			if resent > 0 {
				how = fmt.Sprintf(", after the NACKed version was sent again %d times and NACKed again (see nack_not_resent)", resent)
			}
			return pass("%s: after a NACK, a change of %s was sent as a new version%s", typeName(t), ns[0], how)
		}
		if err := answer(g); err != nil {
			return fail("%v", err)
		}
	}
}

func checkStaleNonce(r *run) outcome {
	if r.v.delta() {
		return checkStaleNonceDelta(r)
	}
	t, ok := r.pick(2, preferred...)
	if !ok {
		return staleNonceAfterChange(r, skip("needs a type with two resources"))
	}
	a, b := r.names(t)[0], r.names(t)[1]
	s := r.session()
	if err := s.sotw(t, a); err != nil {
		return setupFailed(err)
	}
	r1, err := s.next(t)
	if err != nil {
		return staleNonceAfterChange(r, setupFailed(fmt.Errorf("%s [%s]: %w", typeName(t), a, err)))
	}
	if err := s.sotw(t, b); err != nil {
		return setupFailed(err)
	}
	if _, err := s.until(t, false, func(got []*response) bool { return covers(union(got), []string{b}) }); err != nil {
		return setupFailed(fmt.Errorf("%s [%s]: %w", typeName(t), b, err))
	}
	latest := s.st(t).nonce
	stale := protoSotW(t, s.st(t).version, r1.nonce, a, b)
	if err := s.send(t, stale); err != nil {
		return fail("%v", err)
	}
	after, err := s.settle(false, t)
	if err != nil {
		return fail("%v", err)
	}
	if len(after) > 0 {
		return fail("%s: the request [%s %s] with the stale nonce %q (the latest was %q) was answered: %s", typeName(t), a, b, r1.nonce, latest, after[0].describe())
	}
	if err := s.sotw(t, a, b); err != nil {
		return fail("%v", err)
	}
	if _, err := s.until(t, false, func(got []*response) bool { return covers(union(got), []string{a}) }); err != nil {
		return skip("could not confirm: the same request with the latest nonce was not answered either (%v)", err)
	}
	return pass("%s: [%s %s] with a stale nonce got no response within %v; with the latest nonce, it was answered", typeName(t), a, b, r.k.cfg.Quiet)
}

// staleNonceAfterChange is stale_nonce (SotW) for a server that cannot
// be asked for a subset (or has one resource per type), with
// Config.Change: after an ACK of every resource of a type and a change
// pushed, a request carrying the ACKed version, the ACKed (stale) nonce
// and one name more is not answered, where a server that ignores nonces
// answers a client whose version is behind. Without Change it returns
// why, the reason the names path failed.
func staleNonceAfterChange(r *run, why outcome) outcome {
	if r.k.cfg.Change == nil {
		return why
	}
	t, ok := r.pick(1, preferred...)
	if !ok {
		return why
	}
	ns := r.names(t)
	s := r.session()
	got, err := r.get(s, t, ns, ns)
	if err != nil {
		return setupFailed(fmt.Errorf("%s %s: %w", typeName(t), nameList(ns), err))
	}
	acked := got[len(got)-1]
	if err := r.change(Update, t, ns[0]); err != nil {
		return fail("%v", err)
	}
	if _, err := s.until(t, false, func(got []*response) bool {
		return len(got) > 0 && got[len(got)-1].version != acked.version
	}); err != nil {
		return setupFailed(fmt.Errorf("a change of %s was not sent: %w", ns[0], err))
	}
	latest := s.st(t).nonce
	names := append(slices.Clone(ns), absentName(t))
	if err := s.send(t, protoSotW(t, acked.version, acked.nonce, names...)); err != nil {
		return fail("%v", err)
	}
	after, err := s.settle(false, t)
	if err != nil {
		return fail("%v", err)
	}
	if len(after) > 0 {
		return fail("%s: a request with version_info %q and the stale nonce %q (the latest was %q) was answered: %s", typeName(t), acked.version, acked.nonce, latest, after[0].describe())
	}
	return pass("%s: a request with the stale nonce %q, behind a change, got no response within %v", typeName(t), acked.nonce, r.k.cfg.Quiet)
}

func checkStaleNonceDelta(r *run) outcome {
	t, ok := r.pick(3, preferred...)
	three := ok
	if !ok {
		if t, ok = r.pick(2, preferred...); !ok {
			return skip("needs a type with two resources")
		}
	}
	ns := r.names(t)
	s := r.session()
	if err := s.subscribe(t, ns[:1], nil); err != nil {
		return setupFailed(err)
	}
	r1, err := s.next(t)
	if err != nil {
		return setupFailed(fmt.Errorf("%s [%s]: %w", typeName(t), ns[0], err))
	}
	var unsub []string
	if !three {
		unsub = ns[:1]
	}
	if err := s.subscribe(t, ns[1:2], unsub); err != nil {
		return setupFailed(err)
	}
	if _, err := s.until(t, false, func(got []*response) bool { return covers(union(got), ns[1:2]) }); err != nil {
		return setupFailed(fmt.Errorf("%s [%s]: %w", typeName(t), ns[1], err))
	}
	want := ns[0] // subscribed again (two resources)
	if three {
		want = ns[2]
	}
	if err := s.send(t, protoDeltaSub(t, r1.nonce, want)); err != nil {
		return fail("%v", err)
	}
	if _, err := s.until(t, false, func(got []*response) bool { return covers(union(got), []string{want}) }); err != nil {
		how := ""
		if !three {
			how = " (" + want + " was unsubscribed before: see resubscribe too)"
		}
		return fail("%s: subscribing to %s in a request with the stale nonce %q: %s%s", typeName(t), want, r1.nonce, notAnswered(err), how)
	}
	return pass("%s: subscribing to %s with a stale nonce was honoured", typeName(t), want)
}

func checkWildcardNameUnsubscribed(r *run) outcome {
	t, ok := r.pick(1, clusterThenListener()...)
	if !ok {
		return skip("the server has no Listener or Cluster to work with")
	}
	a, x := r.names(t)[0], absentName(t)
	s := r.session()
	if _, err := r.get(s, t, []string{"*", a, x}, r.names(t)); err != nil {
		return setupFailed(fmt.Errorf(`%s ["*" %s %s]: %w`, typeName(t), a, x, err))
	}
	if _, err := s.settle(true, t); err != nil {
		return setupFailed(err)
	}
	if err := s.subscribe(t, nil, []string{a, x}); err != nil {
		return fail("%v", err)
	}
	got, err := s.until(t, true, func(got []*response) bool {
		return slices.Contains(union(got), a) && slices.Contains(removedIn(got), x)
	})
	var p problems
	if slices.Contains(removedIn(got), a) {
		p.add("%s: unsubscribing %s, which the wildcard covers, named it in removed_resources", typeName(t), a)
	}
	if err != nil {
		if !slices.Contains(union(got), a) {
			p.add("%s: unsubscribing %s, which the wildcard covers, did not send it in resources: %s", typeName(t), a, notAnswered(err))
		}
		if !slices.Contains(removedIn(got), x) {
			p.add("%s: unsubscribing %s, which does not exist, did not name it in removed_resources: %s", typeName(t), x, notAnswered(err))
		}
	}
	return p.outcome("%s: %s came back in resources and %s in removed_resources", typeName(t), a, x)
}

// clusterThenListener returns the wildcard types, Cluster first.
func clusterThenListener() []string {
	return []string{wildcardTypes[1], wildcardTypes[0]}
}

// staleVersion is a version no server gives a resource.
const staleVersion = "xds-conformance-stale"

func checkInitialVersions(r *run) outcome {
	t, ok := r.pick(2, preferred...)
	if !ok {
		if t, ok = r.pick(1, preferred...); !ok {
			return skip("the server has no resources to work with")
		}
	}
	ns := r.names(t)
	s1 := r.session()
	got, err := r.get(s1, t, ns, ns)
	if err != nil {
		return setupFailed(fmt.Errorf("%s %s: %w", typeName(t), nameList(ns), err))
	}
	have := delivered(got)
	a, x := ns[0], absentName(t)
	initial := map[string]string{a: have[a], x: staleVersion}
	sub := []string{a, x}
	var b string
	if len(ns) > 1 {
		b = ns[1]
		initial[b] = staleVersion
		sub = append(sub, b)
	}
	s2 := r.session()
	if err := s2.send(t, protoDeltaInitial(t, sub, initial)); err != nil {
		return fail("%v", err)
	}
	rs, err := s2.until(t, true, func(got []*response) bool {
		return (b == "" || slices.Contains(union(got), b)) && slices.Contains(removedIn(got), x)
	})
	more, err2 := s2.settle(true, t)
	rs = append(rs, more...)
	var p problems
	for _, g := range rs {
		if g.hasVersion(a, have[a]) {
			p.add("%s: %s was sent again at version %q, the one the client gave in initial_resource_versions", typeName(t), a, have[a])
			break
		}
	}
	if err != nil || err2 != nil {
		if b != "" && !slices.Contains(union(rs), b) {
			p.add("%s: %s, whose version the client gave as stale, was not sent: %s", typeName(t), b, notAnswered(firstErr(err, err2)))
		}
		if !slices.Contains(removedIn(rs), x) {
			p.add("%s: %s, which does not exist, was not named in removed_resources: %s", typeName(t), x, notAnswered(firstErr(err, err2)))
		}
	}
	return p.outcome("%s: only the stale resource was sent, the missing one named in removed_resources", typeName(t))
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkMissingReported(r *run) outcome {
	s := r.session()
	for _, t := range builtinTypes {
		if err := s.subscribe(t, []string{absentName(t)}, nil); err != nil {
			return setupFailed(err)
		}
	}
	var p problems
	for _, t := range builtinTypes {
		x := absentName(t)
		if _, err := s.until(t, true, func(got []*response) bool { return slices.Contains(removedIn(got), x) }); err != nil {
			p.add("%s %s: not named in removed_resources: %s", typeName(t), x, notAnswered(err))
		}
	}
	return p.outcome("a name that does not exist was named in removed_resources, for every type")
}

func checkEmptyAfterNames(r *run) outcome {
	t, ok := r.pick(1, preferred...)
	if !ok {
		return skip("the server has no resources to work with")
	}
	a := r.names(t)[0]
	s := r.session()
	if _, err := r.get(s, t, r.names(t), r.names(t)); err != nil {
		return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
	}
	var err error
	if r.v.delta() {
		err = s.subscribe(t, nil, r.names(t))
	} else {
		err = s.sotw(t)
	}
	if err != nil {
		return fail("%v", err)
	}
	var p problems
	look := func(when string) {
		after, err := s.settle(true, t)
		if err != nil {
			p.add("%s: %v", when, err)
		}
		for _, g := range after {
			if len(g.names) > 0 {
				p.add("%s: %s %s was sent though nothing is subscribed", when, typeName(t), nameList(g.names))
				return
			}
		}
	}
	look("after unsubscribing from everything")
	if err := r.change(Update, t, a); err != nil {
		return fail("%v", err)
	}
	look("after a change of " + a)
	return p.outcome("%s: after unsubscribing from every name, nothing was sent, not even a change", typeName(t))
}

func checkUnsubscribe(r *run) outcome {
	t, ok := r.pick(2, preferred...)
	if !ok {
		return skip("needs a type with two resources")
	}
	a, b := r.names(t)[0], r.names(t)[1]
	s := r.session()
	if _, err := r.get(s, t, []string{a, b}, []string{a, b}); err != nil {
		return setupFailed(fmt.Errorf("%s [%s %s]: %w", typeName(t), a, b, err))
	}
	var err error
	if r.v.delta() {
		err = s.subscribe(t, nil, []string{b})
	} else {
		err = s.sotw(t, a)
	}
	if err != nil {
		return fail("%v", err)
	}
	var p problems
	look := func(when string) {
		after, err := s.settle(true, t)
		if err != nil {
			p.add("%s: %v", when, err)
		}
		for _, g := range after {
			if g.has(b) {
				p.add("%s: %s was sent though unsubscribed (%s)", when, b, g.describe())
				return
			}
		}
	}
	look("after unsubscribing " + b)
	if err := r.change(Update, t, b); err != nil {
		return fail("%v", err)
	}
	look("after a change of " + b)
	return p.outcome("%s: %s, unsubscribed, was not sent, not even after a change", typeName(t), b)
}

func checkUpdatePushed(r *run) outcome {
	t, ok := r.pick(1, preferred...)
	if !ok {
		return skip("the server has no resources to work with")
	}
	ns := r.names(t)
	a := ns[0]
	if r.v == REST {
		first, err := r.get(nil, t, ns, nil)
		if err != nil {
			return setupFailed(err)
		}
		v1 := first[0].version
		if err := r.change(Update, t, a); err != nil {
			return fail("%v", err)
		}
		pr, err := r.k.poll(r.ctx, t, v1, r.k.cfg.Timeout, ns...)
		switch {
		case err != nil:
			return fail("%s: a poll with the old version_info %q after a change of %s: %v", typeName(t), v1, a, err)
		case pr.resp == nil && pr.code == 0:
			return fail("%s: a poll with the old version_info %q after a change of %s was not answered within %v", typeName(t), v1, a, r.k.cfg.Timeout)
		case pr.resp == nil:
			return fail("%s: a poll with the old version_info %q after a change of %s was answered %d", typeName(t), v1, a, pr.code)
		case pr.resp.version == v1 || !pr.resp.has(a):
			return fail("%s: a poll with the old version_info %q after a change of %s was answered with %s", typeName(t), v1, a, pr.resp.describe())
		}
		return pass("%s: after a change of %s, a poll with the old version got version_info %q", typeName(t), a, pr.resp.version)
	}
	s := r.session()
	got, err := r.get(s, t, ns, ns)
	if err != nil {
		return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
	}
	have := delivered(got)
	v1 := s.st(t).version
	if err := r.change(Update, t, a); err != nil {
		return fail("%v", err)
	}
	var sameVersion *response
	pushed, err := s.until(t, true, func(got []*response) bool {
		if len(got) == 0 {
			return false
		}
		g := got[len(got)-1]
		if !g.has(a) {
			return false
		}
		if g.delta != nil {
			return !g.hasVersion(a, have[a])
		}
		if g.version == v1 {
			sameVersion = g
		}
		return true
	})
	switch {
	case err != nil:
		return fail("%s: a change of %s was not sent: %s", typeName(t), a, notAnswered(err))
	case sameVersion != nil:
		return fail("%s: the change of %s was sent under the version_info it had before (%q)", typeName(t), a, v1)
	}
	last := pushed[len(pushed)-1]
	if last.delta == nil && isWildcardType(t) && !covers(last.names, ns) {
		return fail("%s: the response with the change of %s lacks %s: SotW %s responses hold the complete state", typeName(t), a, nameList(missing(last.names, ns)), typeName(t))
	}
	if last.delta != nil {
		return pass("%s: a change of %s was sent at version %q (was %q)", typeName(t), a, last.versions[a], have[a])
	}
	return pass("%s: a change of %s was sent as version_info %q (was %q)", typeName(t), a, last.version, v1)
}

func checkSystemVersion(r *run) outcome {
	t, ok := r.pick(1, preferred...)
	if !ok {
		return skip("the server has no resources to work with")
	}
	ns := r.names(t)
	a := ns[0]
	s := r.session()
	got, err := r.get(s, t, ns, ns)
	if err != nil {
		return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
	}
	have := delivered(got)
	before := got[len(got)-1].version
	if err := r.change(Update, t, a); err != nil {
		return fail("%v", err)
	}
	pushed, err := s.until(t, true, func(got []*response) bool {
		return len(got) > 0 && got[len(got)-1].has(a) && !got[len(got)-1].hasVersion(a, have[a])
	})
	if err != nil {
		return setupFailed(fmt.Errorf("a change of %s was not sent: %w", a, err))
	}
	after := pushed[len(pushed)-1].version
	switch {
	case before == "" && after == "":
		return skip("the server sends no system_version_info (optional, for debugging)")
	case before == after:
		return fail("%s: system_version_info stayed %q after a change of %s", typeName(t), after, a)
	}
	return pass("%s: system_version_info went from %q to %q with a change of %s", typeName(t), before, after, a)
}

func checkDeleted(r *run) outcome {
	candidates := preferred
	if !r.v.delta() {
		candidates = clusterThenListener()
	}
	t, ok := r.pick(1, candidates...)
	if !ok {
		if !r.v.delta() {
			return skip("SotW signals deletions only for Listener and Cluster, and the server has none")
		}
		return skip("the server has no resources to work with")
	}
	ns := r.names(t)
	a := ns[0]
	others := ns[1:]
	if r.v == REST {
		return checkDeletedREST(r, t, a)
	}
	s := r.session()
	if _, err := r.get(s, t, ns, ns); err != nil {
		return setupFailed(fmt.Errorf("%s: %w", typeName(t), err))
	}
	if err := r.change(Delete, t, a); err != nil {
		return fail("%v", err)
	}
	restored := false
	defer func() {
		if !restored {
			r.change(Restore, t, a)
		}
	}()
	gone, err := s.until(t, true, func(got []*response) bool {
		if len(got) == 0 {
			return false
		}
		g := got[len(got)-1]
		if g.delta != nil {
			return g.wasRemoved(a)
		}
		return !g.has(a)
	})
	if err != nil {
		how := "left out of a response"
		if r.v.delta() {
			how = "named in removed_resources"
		}
		return fail("%s: after %s was deleted, it was not %s: %s", typeName(t), a, how, notAnswered(err))
	}
	if g := gone[len(gone)-1]; g.delta == nil && !covers(g.names, others) {
		return fail("%s: the response without the deleted %s lacks %s too: SotW %s responses hold the complete state", typeName(t), a, nameList(missing(g.names, others)), typeName(t))
	}
	restored = true
	if err := r.change(Restore, t, a); err != nil {
		return fail("%v", err)
	}
	if _, err := s.until(t, true, func(got []*response) bool { return len(got) > 0 && got[len(got)-1].has(a) }); err != nil {
		return fail("%s: %s, deleted then back, was not sent again: %s", typeName(t), a, notAnswered(err))
	}
	return pass("%s: %s disappeared when deleted and came back when restored", typeName(t), a)
}

func checkDeletedREST(r *run, t, a string) outcome {
	ns := r.names(t)
	first, err := r.get(nil, t, ns, nil)
	if err != nil {
		return setupFailed(err)
	}
	v1 := first[0].version
	if err := r.change(Delete, t, a); err != nil {
		return fail("%v", err)
	}
	pr, err := r.k.poll(r.ctx, t, v1, r.k.cfg.Timeout, ns...)
	if rerr := r.change(Restore, t, a); rerr != nil && err == nil {
		err = rerr
	}
	switch {
	case err != nil:
		return fail("%s: a poll after %s was deleted: %v", typeName(t), a, err)
	case pr.resp == nil:
		return fail("%s: a poll with version_info %q after %s was deleted was not answered with a new version (status %d)", typeName(t), v1, a, pr.code)
	case pr.resp.has(a):
		return fail("%s: a poll after %s was deleted was answered with it (%s)", typeName(t), a, pr.resp.describe())
	}
	back, err := r.k.poll(r.ctx, t, pr.resp.version, r.k.cfg.Timeout, ns...)
	switch {
	case err != nil:
		return fail("%s: a poll after %s was restored: %v", typeName(t), a, err)
	case back.resp == nil || !back.resp.has(a):
		return fail("%s: a poll after %s was restored did not get it (status %d)", typeName(t), a, back.code)
	}
	return pass("%s: a poll left %s out once deleted and had it once restored", typeName(t), a)
}
