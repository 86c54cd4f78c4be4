// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// This file handles the errors a management server reports per resource in
// a response's resource_errors (xRFC TP3; gRFC A88 "Support for Errors
// Provided by the xDS server"; R-19), and the server feature
// fail_on_data_errors (gRFC A88 "Handling Data Errors"; ).

// reportedError is one usable entry of a response's resource_errors.
type reportedError struct {
	name   string // canonical
	status *statuspb.Status
}

// parseResourceErrors returns the usable entries of resource_errors, each
// name once, in response order, and a top-level error (which makes the
// response a NACK) for each entry without a resource name or with status
// OK, and for each name repeated.
func parseResourceErrors(errs []*v3discoverypb.ResourceError) (reps []reportedError, topErrs []error) {
	var seen map[string]bool
	for i, e := range errs {
		name := e.GetResourceName().GetName()
		switch {
		case name == "":
			topErrs = append(topErrs, fmt.Errorf("resource_errors[%d]: resource_name.name is empty", i))
			continue
		case codes.Code(e.GetErrorDetail().GetCode()) == codes.OK:
			topErrs = append(topErrs, fmt.Errorf("resource_errors[%d] (%q): error_detail has status OK", i, name))
			continue
		}
		name = resources.CanonicalName(name)
		if seen == nil {
			seen = make(map[string]bool, len(errs))
		}
		if seen[name] {
			topErrs = append(topErrs, fmt.Errorf("resource_errors[%d]: duplicate resource name %q", i, name))
			continue
		}
		seen[name] = true
		reps = append(reps, reportedError{name: name, status: e.GetErrorDetail()})
	}
	return reps, topErrs
}

// failOnDataErrors reports whether the server of ch has the server feature
// fail_on_data_errors.
func (ch *channel) failOnDataErrors() bool {
	return ch.sc.HasFeature(bootstrap.FeatureFailOnDataErrors)
}

// applyReportedLocked applies the server-reported errors of one response,
// after its resources: a name that already got a per-resource error in
// the response (resErrs) is skipped, and so is a name the client has no
// entry for (not watched, or not received through the wildcard): the
// server's errors create no entries.
func (ch *channel) applyReportedLocked(ts *typeState, reps []reportedError, resErrs map[string]error, now time.Time, fc *flowControl) {
	for _, r := range reps {
		if _, bad := resErrs[r.name]; bad {
			continue
		}
		if rs := ts.entries[r.name]; rs != nil {
			ch.serverErrorLocked(rs, r.status, now, fc)
		}
	}
}

// serverErrorLocked applies the error the management server reported for
// rs: the does-not-exist timer stops, as the resource was seen
// the cached value is dropped when the server has
// fail_on_data_errors and the code is NOT_FOUND or PERMISSION_DENIED
// except a NOT_FOUND while ignore_resource_deletion keeps the
// value; watchers get AmbientError when a value remains,
// ResourceError otherwise. Without a value, NOT_FOUND is a does-not-exist
// (status DOES_NOT_EXIST, an error wrapping ErrResourceNotFound); every
// other case shows RECEIVED_ERROR in Dump, with the server's status in
// error_state, and wraps ErrServerReported (and ErrResourceNotFound for
// NOT_FOUND). The same error twice in a row is reported once.
func (ch *channel) serverErrorLocked(rs *resourceState, st *statuspb.Status, now time.Time, fc *flowControl) {
	c := ch.c
	rs.stopTimerLocked()
	rs.timerState = timerReceived
	rs.skipDeletion = false
	rs.ttlExpired = false
	code := codes.Code(st.GetCode())
	hadValue := rs.value != nil
	if rs.value != nil && (code == codes.NotFound || code == codes.PermissionDenied) && ch.failOnDataErrors() &&
		(code != codes.NotFound || !ch.sc.IgnoreResourceDeletion()) {
		c.dropValueLocked(rs)
	}
	serr := status.ErrorProto(st)
	var err error
	if code == codes.NotFound {
		err = fmt.Errorf("%w (%w): %w", ErrResourceNotFound, ErrServerReported, serr)
	} else {
		err = fmt.Errorf("%w: %w", ErrServerReported, serr)
	}
	prev := rs.ext().serverErr
	repeat := prev != nil && prev.err.Error() == err.Error() && hadValue == (rs.value != nil)
	ext := rs.extLocked()
	ext.nack = nil
	ext.serverErr = &serverErrState{err: err, time: now}
	if code == codes.NotFound && rs.value == nil {
		rs.status = statusDoesNotExist
		ext.dneReason = fmt.Sprintf("reported by the management server (%v)", serr)
	} else {
		rs.status = statusReceivedError
	}
	ch.logger.Warn("management server reported a resource error", xdslog.KeyTypeURL, rs.typ.TypeURL(),
		xdslog.KeyResource, rs.name, xdslog.KeyError, serr, "cached_value_kept", rs.value != nil)
	if repeat {
		return
	}
	werr := c.resourceError(rs.typ, rs.name, err)
	for _, we := range c.watchersLocked(rs) {
		if rs.value != nil {
			c.scheduleLocked(we, fc, func(done func()) { we.ambErr(werr, done) })
		} else {
			c.scheduleLocked(we, fc, func(done func()) { we.resErr(werr, done) })
		}
	}
}

// dropOnDataErrorLocked drops the cached value of rs, whose update was just
// NACKed, when its server has fail_on_data_errors (gRFC A88, R-2.4): its
// watchers then get ResourceError, not AmbientError. It reports whether the
// value was dropped.
func (ch *channel) dropOnDataErrorLocked(rs *resourceState) bool {
	if rs.value == nil || !ch.failOnDataErrors() {
		return false
	}
	ch.c.dropValueLocked(rs)
	ch.logger.Warn("dropping the cached resource after a NACK (fail_on_data_errors)", xdslog.KeyTypeURL, rs.typ.TypeURL(), xdslog.KeyResource, rs.name)
	return true
}
