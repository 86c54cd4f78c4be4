// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"errors"
	"fmt"
)

// ValidationError reports why a resource is invalid: the decoders of the
// built-in types return it (possibly wrapped), so callers can use errors.As
// to find the offending field. Error returns "<Field>: <Reason>", or just
// Reason when Field is empty.
type ValidationError struct {
	// Field is the path of the offending field in proto field names,
	// relative to the resource's top-level message, with list indexes in
	// brackets, for example
	// "api_listener.api_listener.rds.route_config_name" or
	// "virtual_hosts[0].routes[3].route.weighted_clusters". Empty when the
	// error concerns the whole resource.
	Field string
	// Reason says what is wrong with the field, for example "empty" or
	// "config source must be ads or self". It includes the text of Err.
	Reason string
	// Err is the cause, when the field is invalid because decoding or
	// parsing it failed (a proto decoding error, a RE2 syntax error, …);
	// nil otherwise. Unwrap returns it, so errors.Is and errors.As see
	// through a ValidationError.
	Err error
}

// Error implements error.
func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Unwrap returns Err.
func (e *ValidationError) Unwrap() error { return e.Err }

// invalid returns a *ValidationError for field. The reason is built with
// fmt.Errorf only when args are given; the error a %w verb names becomes
// the ValidationError's Err.
func invalid(field, reason string, args ...any) *ValidationError {
	if len(args) == 0 {
		return &ValidationError{Field: field, Reason: reason}
	}
	err := fmt.Errorf(reason, args...)
	return &ValidationError{Field: field, Reason: err.Error(), Err: errors.Unwrap(err)}
}

// joinField joins two field paths with a '.'; either may be empty.
func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case field[0] == '[':
		return prefix + field
	default:
		return prefix + "." + field
	}
}

// withFieldPrefix returns nil for a nil err, and otherwise err with prefix added in front of its Field when
// err is a *ValidationError, and err wrapped with the prefix as context
// otherwise. Decoding helpers report fields relative to their own message
// and their callers add the path on the way up, so that field paths are
// only built on the error path.
func withFieldPrefix(prefix string, err error) error {
	if err == nil {
		return nil
	}
	if ve, ok := err.(*ValidationError); ok {
		return &ValidationError{Field: joinField(prefix, ve.Field), Reason: ve.Reason, Err: ve.Err}
	}
	return fmt.Errorf("%s: %w", prefix, err)
}
