// SPDX-License-Identifier: Apache-2.0

package server

import (
	"io"

	"google.golang.org/grpc/authz/audit"

	"github.com/proxyless/xds/internal/rbac"
)

// StdoutAuditLoggerName is the name of the standard audit logger of gRFC
// A59, "stdout_logger": the builder of the logger configs whose
// typed_config is an envoy.extensions.rbac.audit_loggers.stream.v3.StdoutAuditLog.
const StdoutAuditLoggerName = rbac.StdoutAuditLoggerName

// NewStdoutAuditLogger returns the builder of the standard audit logger
// of gRFC A59, named StdoutAuditLoggerName, writing to w (nil: os.Stdout).
// Its loggers write each event as one line of JSON, for example
//
//	{"grpc_audit_log":{"rpc_method":"/pkg.Service/Foo","principal":"spiffe://foo/user1","policy_name":"envoy.filters.http.rbac","matched_rule":"admin_access","authorized":true,"timestamp":"2006-01-02T15:04:05.999999999Z"}}
//
// (the format of grpc-go's stdout logger), one write per line, serialized
// across the loggers of the builder. Its config takes no fields. The
// built-in builder writes to os.Stdout; give one writing elsewhere with
// WithAuditLoggers (of this package, or of package xdshttp's net/http
// server, where rpc_method is the request's path).
func NewStdoutAuditLogger(w io.Writer) audit.LoggerBuilder {
	return rbac.NewStdoutAuditLogger(w)
}
