// SPDX-License-Identifier: Apache-2.0

package otelxds

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/proxyless/xds/client"
)

// Metric names (gRFC A78).
const (
	MetricResourceUpdatesValid   = "grpc.xds_client.resource_updates_valid"
	MetricResourceUpdatesInvalid = "grpc.xds_client.resource_updates_invalid"
	MetricServerFailure          = "grpc.xds_client.server_failure"
	MetricConnected              = "grpc.xds_client.connected"
	MetricResources              = "grpc.xds_client.resources"
)

// Attribute keys (gRFC A78).
const (
	KeyTarget       = "grpc.target"
	KeyServer       = "grpc.xds.server"
	KeyAuthority    = "grpc.xds.authority"
	KeyCacheState   = "grpc.xds.cache_state"
	KeyResourceType = "grpc.xds.resource_type"
)

// ScopeName is the instrumentation scope (the meter name) of the
// instruments.
const ScopeName = "github.com/proxyless/xds/otelxds"

// Recorder is a client.MetricsRecorder that records to OpenTelemetry
// instruments of one MeterProvider. One Recorder may serve any number of
// clients; each one's records carry its target (client.WithTarget). It is
// safe for concurrent use.
type Recorder struct {
	// Initialized by New and read-only afterwards.
	valid, invalid, failures metric.Int64Counter
	connected, resources     metric.Int64ObservableGauge
	reg                      metric.Registration

	// Guarded by mu.
	mu      sync.Mutex
	readers map[*gaugeReader]struct{} // one per client, from RegisterGauges until its Close
	closed  bool
}

// gaugeReader is the gauge function of one client.
type gaugeReader struct{ read func() client.Gauges }

// New returns a Recorder whose instruments are created from mp's meter
// ScopeName, and registers the callback that reads the gauges of every
// client using it on each collection. It returns an error if an
// instrument or the callback cannot be created. Close unregisters the
// callback.
func New(mp metric.MeterProvider) (*Recorder, error) {
	if mp == nil {
		return nil, errors.New("otelxds: nil MeterProvider")
	}
	m := mp.Meter(ScopeName)
	r := &Recorder{readers: make(map[*gaugeReader]struct{})}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	r.valid = counter(MetricResourceUpdatesValid, "{resource}",
		"A counter of resources received that were considered valid. The counter will be incremented even for resources that have not changed.")
	r.invalid = counter(MetricResourceUpdatesInvalid, "{resource}",
		"A counter of resources received that were considered invalid.")
	r.failures = counter(MetricServerFailure, "{failure}",
		"A counter of xDS servers going from healthy to unhealthy. A server goes unhealthy when we have a connectivity failure or when the ADS stream fails without seeing a response message, as per gRFC A57.")
	r.connected = gauge(MetricConnected, "{bool}",
		"Whether or not the xDS client currently has a working ADS stream to the xDS server.")
	r.resources = gauge(MetricResources, "{resource}", "Number of xDS resources.")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("otelxds: creating instruments: %w", err)
	}
	reg, err := m.RegisterCallback(r.observe, r.connected, r.resources)
	if err != nil {
		return nil, fmt.Errorf("otelxds: registering the gauge callback: %w", err)
	}
	r.reg = reg
	return r, nil
}

// Close unregisters the gauge callback: the gauges of no client are
// reported any more; counters still are. It is idempotent.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	return r.reg.Unregister()
}

// RecordResourceUpdates implements client.MetricsRecorder.
func (r *Recorder) RecordResourceUpdates(u client.ResourceUpdates) {
	attrs := metric.WithAttributes(
		attribute.String(KeyTarget, u.Target),
		attribute.String(KeyServer, u.Server),
		attribute.String(KeyResourceType, u.ResourceType),
	)
	ctx := context.Background()
	if u.Valid > 0 {
		r.valid.Add(ctx, u.Valid, attrs)
	}
	if u.Invalid > 0 {
		r.invalid.Add(ctx, u.Invalid, attrs)
	}
}

// RecordServerFailure implements client.MetricsRecorder.
func (r *Recorder) RecordServerFailure(f client.ServerFailure) {
	r.failures.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String(KeyTarget, f.Target),
		attribute.String(KeyServer, f.Server),
	))
}

// RegisterGauges implements client.MetricsRecorder: read is called on
// each collection until the returned function is called (by the client's
// Close).
func (r *Recorder) RegisterGauges(read func() client.Gauges) (unregister func()) {
	gr := &gaugeReader{read: read}
	r.mu.Lock()
	r.readers[gr] = struct{}{}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.readers, gr)
		r.mu.Unlock()
	}
}

// observe is the gauge callback: it reads every registered client's
// gauges, outside r.mu (a read takes the client's lock).
func (r *Recorder) observe(_ context.Context, o metric.Observer) error {
	r.mu.Lock()
	readers := make([]*gaugeReader, 0, len(r.readers))
	for gr := range r.readers {
		readers = append(readers, gr)
	}
	r.mu.Unlock()
	for _, gr := range readers {
		g := gr.read()
		target := attribute.String(KeyTarget, g.Target)
		for _, s := range g.Connected {
			v := int64(0)
			if s.Connected {
				v = 1
			}
			o.ObserveInt64(r.connected, v, metric.WithAttributes(target, attribute.String(KeyServer, s.Server)))
		}
		for _, rc := range g.Resources {
			o.ObserveInt64(r.resources, rc.Count, metric.WithAttributes(target,
				attribute.String(KeyAuthority, rc.Authority),
				attribute.String(KeyCacheState, rc.CacheState),
				attribute.String(KeyResourceType, rc.ResourceType),
			))
		}
	}
	return nil
}

var _ client.MetricsRecorder = (*Recorder)(nil)
