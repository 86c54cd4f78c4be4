// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

var resolveCommand = &command{
	name:     "resolve",
	synopsis: "[--bootstrap FILE | --server HOST:PORT | --rest URL | --file PATH] [--delta] [--per-type] [--persist-dir DIR [--persist-timeout D]] [--once [--timeout D]] [-o text|json|yaml] [--authority A] [--resource-timeout D] LISTENER",
	summary:  "print the complete configuration a Listener leads to, as a gRPC channel sees it",
	help: `Resolve follows a Listener and everything it leads to, as a gRPC channel does
(gRFC A74): its RouteConfiguration, the virtual host selected for the
authority, every cluster its routes name (aggregate clusters down to their
leaves), and the endpoints of every cluster (EDS, or DNS for LOGICAL_DNS
clusters). Each time the whole tree is known, it prints it:

  Listener → RouteConfiguration → virtual host and routes → clusters →
  localities (priority, weight) → endpoints (weight, health)

A cluster that does not exist or is invalid is printed with its error; the
rest of the configuration still is. A Listener or RouteConfiguration that
does not exist or is invalid, or a RouteConfiguration without a virtual host
for the authority, makes the whole configuration unusable: that is printed
as an error line. Versions are the version_info each resource was received
with.

Without --once, resolve prints every new configuration until interrupted
(Ctrl-C), then exits 0. With --once, it prints the first complete
configuration and exits 0, or exits 1 if the configuration is unusable
first (for example a Listener that does not exist, after the
does-not-exist timer, --resource-timeout) or if none is complete within
--timeout (default 20s: longer than the does-not-exist timer, so a missing
resource is reported as such), for example because the management server
does not answer.

With --output json it prints one JSON object per line: {"config":{…}},
{"error":"…"} or {"ambient_error":"…"}; routes are objects with a "match"
(prefix, path or safe_regex, case_sensitive, headers,
fraction_per_million) and an "action" (kind, cluster, weighted_clusters,
…). With --output yaml it prints the same as YAML documents, each
starting with "---".

Without --bootstrap or --server, the bootstrap is read from the file named
by GRPC_XDS_BOOTSTRAP, or from GRPC_XDS_BOOTSTRAP_CONFIG.
`,
	setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var cf clientFlags
		cf.register(fs)
		out := registerOutput(fs)
		once := fs.Bool("once", false, "exit after the first complete configuration (0), or the first error (1)")
		timeout := fs.Duration("timeout", 0, "with --once: give up (exit 1) when no configuration is complete after this long; 0 means 20s")
		authority := fs.String("authority", "", "the data-plane `authority` the virtual host is selected for; default: the Listener name")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return usageErrorf("want exactly one LISTENER, got %q", args)
			}
			if *timeout < 0 {
				return usageErrorf("--timeout must not be negative, got %v", *timeout)
			}
			return runResolve(ctx, e, &cf, resolveOptions{once: *once, timeout: *timeout, out: *out, authority: *authority}, args[0])
		}
	},
}

// defaultResolveTimeout is the default of resolve --timeout: longer than
// the client's does-not-exist timer.
const defaultResolveTimeout = 20 * time.Second

// resolveOptions are the flags of resolve other than the client's.
type resolveOptions struct {
	once      bool
	timeout   time.Duration // with once; 0 means defaultResolveTimeout
	out       outputFormat
	authority string
}

// runResolve implements the resolve command.
func runResolve(ctx context.Context, e *env, cf *clientFlags, o resolveOptions, listener string) error {
	c, err := cf.newClient(e)
	if err != nil {
		return err
	}
	defer c.Close()

	// The Watcher's methods run serially on the Manager's goroutine; the
	// first error or, with --once, the first result ends the command.
	done := make(chan error, 1)
	finish := func(err error) {
		select {
		case done <- err:
		default:
		}
	}
	var writeErr error // set by the Watcher's methods; read after m.Close
	write := func(b []byte) {
		if writeErr != nil {
			return
		}
		if _, err := e.stdout.Write(b); err != nil {
			writeErr = fmt.Errorf("writing output: %w", err)
			finish(writeErr)
		}
	}
	var opts []depmgr.Option
	if o.authority != "" {
		opts = append(opts, depmgr.WithDataPlaneAuthority(o.authority))
	}
	m := depmgr.New(c, listener, watcher.Funcs[*depmgr.XDSConfig]{
		OnChanged: func(cfg *depmgr.XDSConfig) {
			b, err := formatConfig(o.out, cfg, e.now())
			if err != nil {
				finish(err)
				return
			}
			write(b)
			if o.once {
				finish(nil)
			}
		},
		OnResourceError: func(err error) {
			if o.once {
				finish(fmt.Errorf("the configuration of Listener %q is unusable: %w", listener, err))
				return
			}
			write(formatConfigError(o.out, "error", err, e.now()))
		},
		OnAmbientError: func(err error) {
			if !o.once {
				write(formatConfigError(o.out, "ambient_error", err, e.now()))
			}
		},
	}, opts...)
	defer m.Close()

	var timeout <-chan time.Time
	if o.once {
		if o.timeout == 0 {
			o.timeout = defaultResolveTimeout
		}
		timer := time.NewTimer(o.timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case err = <-done:
	case <-timeout:
		err = fmt.Errorf("no complete configuration of Listener %q within %v (--timeout): the management server sent too little, or nothing; try xdsctl status or --log-level debug", listener, o.timeout)
	case <-ctx.Done():
		if o.once {
			err = fmt.Errorf("interrupted before the configuration of Listener %q was complete", listener)
		}
	}
	m.Close() // waits for a Watcher method in progress, so writeErr is settled
	if err == nil {
		err = writeErr
	}
	return err
}

// formatConfig renders a snapshot in format out.
func formatConfig(out outputFormat, cfg *depmgr.XDSConfig, now time.Time) ([]byte, error) {
	if out.structured() {
		b, err := encodeRecord(out, map[string]any{"config": configJSON(cfg)})
		if err != nil {
			return nil, fmt.Errorf("rendering the configuration: %w", err)
		}
		return b, nil
	}
	return []byte(formatConfigText(cfg, now)), nil
}

// formatConfigError renders a whole-config error (kind "error") or an
// ambient error (kind "ambient_error") in format out, on one line.
func formatConfigError(out outputFormat, kind string, err error, now time.Time) []byte {
	if out.structured() {
		b, jerr := encodeRecord(out, map[string]string{kind: err.Error()})
		if jerr == nil {
			return b
		}
		// Only strings: cannot fail; say so in the format asked for.
		b, _ = encodeRecord(out, map[string]string{kind: "xdsctl: rendering an error failed"})
		return b
	}
	what := "error: the configuration is unusable"
	if kind == "ambient_error" {
		what = "ambient error (the configuration stays in use)"
	}
	return fmt.Appendf(nil, "[%s] %s: %s\n", now.Format(time.TimeOnly), what, oneLine(errString(err)))
}

// formatConfigText renders a snapshot as an indented tree: the Listener,
// its RouteConfiguration with the selected virtual host and its routes,
// then each top-level cluster in the order the routes name them (then the
// others, by name) with its endpoints, or its leaves for an aggregate.
// The block ends with a newline.
func formatConfigText(cfg *depmgr.XDSConfig, now time.Time) string {
	var b strings.Builder
	lis, rc, vh := cfg.Listener, cfg.RouteConfig, cfg.VirtualHost
	fmt.Fprintf(&b, "[%s] Listener %s%s: ", now.Format(time.TimeOnly), lis.Name, versionText(cfg.ListenerVersion))
	if lis.InlineRouteConfig != nil {
		fmt.Fprintf(&b, "inline RouteConfiguration %q\n", rc.Name)
	} else {
		fmt.Fprintf(&b, "routes via RouteConfiguration %q\n", lis.RouteConfigName)
	}
	fmt.Fprintf(&b, "  RouteConfiguration %s%s: virtual host %q, domains [%s]\n", rc.Name, versionText(cfg.RouteConfigVersion), vh.Name, strings.Join(vh.Domains, ", "))
	if len(vh.Routes) == 0 {
		b.WriteString("    no routes\n")
	}
	for _, r := range vh.Routes {
		fmt.Fprintf(&b, "    %s -> %s\n", formatMatch(r.Match), formatAction(r.Action))
	}
	for _, name := range clusterOrder(cfg) {
		writeClusterResult(&b, "  ", "", cfg.Cluster(name))
	}
	return b.String()
}

// clusterOrder returns the names of cfg's top-level clusters in the order
// the routes of the virtual host name them, then the others by name.
func clusterOrder(cfg *depmgr.XDSConfig) []string {
	out := make([]string, 0, cfg.NumClusters())
	seen := make(map[string]bool, cfg.NumClusters())
	add := func(name string) {
		name = resources.CanonicalName(name)
		if !seen[name] && cfg.Cluster(name) != nil {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, r := range cfg.VirtualHost.Routes {
		switch r.Action.Kind {
		case resources.RouteActionCluster:
			add(r.Action.Cluster)
		case resources.RouteActionWeightedClusters:
			for _, wc := range r.Action.WeightedClusters {
				add(wc.Name)
			}
		}
	}
	rest := make([]string, 0, cfg.NumClusters()-len(out))
	for name := range cfg.Clusters() {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// writeClusterResult writes one cluster at indent: its Cluster line, then
// its endpoints, or its leaves and skipped clusters for an aggregate.
// label ("leaf ", "skipped ") starts the line.
func writeClusterResult(b *strings.Builder, indent, label string, r *depmgr.ClusterResult) {
	if r.Err != nil {
		fmt.Fprintf(b, "%s%sCluster %s: error: %s\n", indent, label, r.Name, oneLine(errString(r.Err)))
		return
	}
	c := r.Config
	fmt.Fprintf(b, "%s%sCluster %s%s: ", indent, label, c.Name, versionText(c.ClusterVersion))
	writeCluster(b, c.Cluster)
	if c.IsAggregate() {
		for _, leaf := range c.Leaves {
			writeClusterResult(b, indent+"  ", "leaf ", &depmgr.ClusterResult{Name: leaf.Name, Config: leaf})
		}
		for _, s := range c.Skipped {
			writeClusterResult(b, indent+"  ", "skipped ", s)
		}
		return
	}
	var what string
	if c.Cluster.Kind == resources.ClusterKindLogicalDNS {
		what = "DNS " + c.Endpoints.ClusterName
	} else {
		what = "ClusterLoadAssignment " + c.Endpoints.ClusterName + versionText(c.EndpointsVersion)
	}
	if c.ResolutionNote != nil {
		fmt.Fprintf(b, "%s  %s: no endpoints: %s\n", indent, what, oneLine(c.ResolutionNote.Error()))
		return
	}
	var eb strings.Builder
	writeEndpoints(&eb, c.Endpoints)
	fmt.Fprintf(b, "%s  %s: ", indent, what)
	for i, line := range strings.SplitAfter(eb.String(), "\n") {
		if i > 0 && line != "" {
			b.WriteString(indent + "  ")
		}
		b.WriteString(line)
	}
}

func versionText(v string) string {
	if v == "" {
		return ""
	}
	return " (version " + v + ")"
}

// The JSON form of a snapshot. Empty fields are left out.
type (
	jsonConfig struct {
		Listener    jsonResource    `json:"listener"`
		RouteConfig jsonResource    `json:"route_config"`
		VirtualHost jsonVirtualHost `json:"virtual_host"`
		Clusters    []*jsonCluster  `json:"clusters"`
	}
	jsonResource struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
		Inline  bool   `json:"inline,omitempty"`
	}
	jsonVirtualHost struct {
		Name    string      `json:"name"`
		Domains []string    `json:"domains"`
		Routes  []jsonRoute `json:"routes"`
	}
	jsonRoute struct {
		Match  jsonRouteMatch  `json:"match"`
		Action jsonRouteAction `json:"action"`
	}
	// jsonRouteMatch has exactly one of Prefix, Path and SafeRegex.
	jsonRouteMatch struct {
		Prefix             *string           `json:"prefix,omitempty"`
		Path               *string           `json:"path,omitempty"`
		SafeRegex          *string           `json:"safe_regex,omitempty"`
		CaseSensitive      bool              `json:"case_sensitive"`
		Headers            []jsonHeaderMatch `json:"headers,omitempty"`
		FractionPerMillion *uint32           `json:"fraction_per_million,omitempty"`
	}
	jsonHeaderMatch struct {
		Name       string `json:"name"`
		Kind       string `json:"kind"` // exact, safe_regex, range, present, prefix, suffix, contains, …
		Value      string `json:"value,omitempty"`
		RangeStart *int64 `json:"range_start,omitempty"` // for range: [start, end)
		RangeEnd   *int64 `json:"range_end,omitempty"`
		Present    *bool  `json:"present,omitempty"` // for present
		IgnoreCase bool   `json:"ignore_case,omitempty"`
		Invert     bool   `json:"invert,omitempty"`
	}
	jsonRouteAction struct {
		Kind                   string                `json:"kind"` // cluster, weighted_clusters, cluster_specifier_plugin, unsupported, non_forwarding
		Cluster                string                `json:"cluster,omitempty"`
		WeightedClusters       []jsonWeightedCluster `json:"weighted_clusters,omitempty"`
		ClusterSpecifierPlugin string                `json:"cluster_specifier_plugin,omitempty"`
		MaxStreamDuration      string                `json:"max_stream_duration,omitempty"` // a Go duration, "1.5s"
	}
	jsonWeightedCluster struct {
		Name   string `json:"name"`
		Weight uint32 `json:"weight"`
	}
	jsonCluster struct {
		Name           string         `json:"name"`
		Error          string         `json:"error,omitempty"`
		Type           string         `json:"type,omitempty"`
		Version        string         `json:"version,omitempty"`
		EDSServiceName string         `json:"eds_service_name,omitempty"`
		DNS            string         `json:"dns,omitempty"`
		LBPolicy       string         `json:"lb_policy,omitempty"`
		TLS            string         `json:"tls,omitempty"`
		Endpoints      *jsonEndpoints `json:"endpoints,omitempty"`
		Leaves         []*jsonCluster `json:"leaves,omitempty"`
		Skipped        []*jsonCluster `json:"skipped,omitempty"`
	}
	jsonEndpoints struct {
		Name           string         `json:"name"`
		Version        string         `json:"version,omitempty"`
		ResolutionNote string         `json:"resolution_note,omitempty"`
		Localities     []jsonLocality `json:"localities"`
	}
	jsonLocality struct {
		Region    string         `json:"region,omitempty"`
		Zone      string         `json:"zone,omitempty"`
		SubZone   string         `json:"sub_zone,omitempty"`
		Priority  uint32         `json:"priority"`
		Weight    uint32         `json:"weight"`
		Endpoints []jsonEndpoint `json:"endpoints"`
	}
	jsonEndpoint struct {
		Addresses []string `json:"addresses"`
		Weight    uint32   `json:"weight"`
		Health    string   `json:"health"`
	}
)

// configJSON returns the JSON form of cfg; clusters are in the order of
// formatConfigText.
func configJSON(cfg *depmgr.XDSConfig) *jsonConfig {
	lis, rc, vh := cfg.Listener, cfg.RouteConfig, cfg.VirtualHost
	j := &jsonConfig{
		Listener:    jsonResource{Name: lis.Name, Version: cfg.ListenerVersion},
		RouteConfig: jsonResource{Name: rc.Name, Version: cfg.RouteConfigVersion, Inline: lis.InlineRouteConfig != nil},
		VirtualHost: jsonVirtualHost{Name: vh.Name, Domains: vh.Domains, Routes: []jsonRoute{}},
		Clusters:    []*jsonCluster{},
	}
	for _, r := range vh.Routes {
		j.VirtualHost.Routes = append(j.VirtualHost.Routes, jsonRoute{Match: routeMatchJSON(r.Match), Action: routeActionJSON(r.Action)})
	}
	for _, name := range clusterOrder(cfg) {
		j.Clusters = append(j.Clusters, clusterJSON(cfg.Cluster(name)))
	}
	return j
}

func routeMatchJSON(m resources.RouteMatch) jsonRouteMatch {
	j := jsonRouteMatch{CaseSensitive: m.CaseSensitive, FractionPerMillion: m.FractionPerMillion}
	switch m.PathKind {
	case resources.PathKindPrefix:
		j.Prefix = &m.Prefix
	case resources.PathKindPath:
		j.Path = &m.Path
	case resources.PathKindSafeRegex:
		j.SafeRegex = &m.SafeRegex
	}
	for _, h := range m.Headers {
		jh := jsonHeaderMatch{Name: h.Name, Kind: h.Kind.String(), IgnoreCase: h.IgnoreCase, Invert: h.Invert}
		switch h.Kind {
		case resources.HeaderMatchRange:
			jh.RangeStart, jh.RangeEnd = &h.RangeStart, &h.RangeEnd
		case resources.HeaderMatchPresent:
			jh.Present = &h.Present
		default:
			jh.Value = h.Value
		}
		j.Headers = append(j.Headers, jh)
	}
	return j
}

func routeActionJSON(a resources.RouteAction) jsonRouteAction {
	j := jsonRouteAction{Kind: a.Kind.String(), Cluster: a.Cluster, ClusterSpecifierPlugin: a.ClusterSpecifierPlugin}
	for _, wc := range a.WeightedClusters {
		j.WeightedClusters = append(j.WeightedClusters, jsonWeightedCluster{Name: wc.Name, Weight: wc.Weight})
	}
	if a.MaxStreamDuration != nil {
		j.MaxStreamDuration = a.MaxStreamDuration.String()
	}
	return j
}

func clusterJSON(r *depmgr.ClusterResult) *jsonCluster {
	if r.Err != nil {
		return &jsonCluster{Name: r.Name, Error: r.Err.Error()}
	}
	c := r.Config
	j := &jsonCluster{
		Name:    c.Name,
		Type:    c.Cluster.Kind.String(),
		Version: c.ClusterVersion,
	}
	if c.IsAggregate() {
		for _, leaf := range c.Leaves {
			j.Leaves = append(j.Leaves, clusterJSON(&depmgr.ClusterResult{Name: leaf.Name, Config: leaf}))
		}
		for _, s := range c.Skipped {
			j.Skipped = append(j.Skipped, clusterJSON(s))
		}
		return j
	}
	j.LBPolicy = c.Cluster.LBPolicy.Kind.String()
	if c.Cluster.Security != nil {
		j.TLS = securityText(c.Cluster.Security)
	}
	e := &jsonEndpoints{Name: c.Endpoints.ClusterName, Localities: []jsonLocality{}}
	if c.Cluster.Kind == resources.ClusterKindLogicalDNS {
		j.DNS = c.Endpoints.ClusterName
	} else {
		j.EDSServiceName = c.Cluster.EDSServiceName
		e.Version = c.EndpointsVersion
	}
	if c.ResolutionNote != nil {
		e.ResolutionNote = c.ResolutionNote.Error()
	}
	for _, l := range c.Endpoints.Localities {
		jl := jsonLocality{Region: l.ID.Region, Zone: l.ID.Zone, SubZone: l.ID.SubZone, Priority: l.Priority, Weight: l.Weight, Endpoints: []jsonEndpoint{}}
		for _, ep := range l.Endpoints {
			jl.Endpoints = append(jl.Endpoints, jsonEndpoint{Addresses: ep.Addresses, Weight: ep.Weight, Health: ep.HealthStatus.String()})
		}
		e.Localities = append(e.Localities, jl)
	}
	j.Endpoints = e
	return j
}
