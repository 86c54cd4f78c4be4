// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"errors"
	"strings"
)

var (
	// ErrNoBootstrap is wrapped by the error FromEnv returns when neither
	// GRPC_XDS_BOOTSTRAP nor GRPC_XDS_BOOTSTRAP_CONFIG is set. The
	// xDS client cannot be created without a bootstrap config, so callers
	// that want a built-in default can test for it with errors.Is and
	// call Parse on their own JSON.
	ErrNoBootstrap = errors.New("bootstrap: no bootstrap configuration")

	// ErrTooLarge is wrapped by the *ParseError that Parse and FromEnv
	// return for a document larger than MaxSize; the error text gives the
	// size and the limit in bytes.
	ErrTooLarge = errors.New("bootstrap too large")

	// ErrUnknownAuthority is matched (errors.Is) by the errors
	// ServersForAuthority and ListenerResourceName return for an authority
	// that is not a key of Config.Authorities. The error
	// text names the authority in quotes.
	ErrUnknownAuthority = errors.New("bootstrap: unknown authority")
)

// ParseError is the error Parse returns for a bootstrap document that is
// not valid JSON or breaks a rule of gRFC A27, A47 or A65. Every error
// Parse returns is a *ParseError; use errors.As to get at the field.
//
// Its text is "bootstrap: [<Source>: ]<Field>: <Reason>[: <Err>]", for
// example
//
//	bootstrap: xds_servers[0].server_uri: empty
//	bootstrap: file "/etc/xds.json" (GRPC_XDS_BOOTSTRAP): xds_servers: empty
type ParseError struct {
	// Source says where the document came from. Parse leaves it empty;
	// FromEnv sets it to the file or environment variable it read.
	Source string

	// Field is the path of the offending JSON field, written the way a
	// reader finds it in the file: object members joined by ".", list
	// elements as "[i]", map keys as `["key"]` (Go-quoted), for example
	// `authorities["a"].xds_servers[0].channel_creds`. It is empty when the
	// error is about the document as a whole (malformed JSON, not an
	// object).
	Field string

	// Reason says what is wrong with the field, in lowercase, for example
	// "empty" or "want a string, got number".
	Reason string

	// Err is the underlying error (a json.SyntaxError, a duration parse
	// error), or nil.
	Err error
}

// Error implements error.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("bootstrap: ")
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *ParseError) Unwrap() error { return e.Err }

// unknownAuthorityError names the authority that was looked up, so that the
// error text carries the key and not a zero value (STYLE "Things we will not
// do"), while errors.Is still matches ErrUnknownAuthority.
type unknownAuthorityError struct {
	authority string // the key that is missing from Config.Authorities
}

func (e *unknownAuthorityError) Error() string {
	return "bootstrap: authority " + quote(e.authority) + " is not in the bootstrap's authorities"
}

func (e *unknownAuthorityError) Is(target error) bool { return target == ErrUnknownAuthority }
