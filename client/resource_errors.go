// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/resources"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// This file reads the errors a management server reports per resource in
// a response's resource_errors (xRFC TP3; gRFC A88 "Support for Errors
// Provided by the xDS server"; R-19). How they apply to an entry, and the
// server feature fail_on_data_errors (gRFC A88 "Handling Data Errors";
// ), is entry.go's evServerError and evServerNotFound.

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
