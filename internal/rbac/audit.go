// SPDX-License-Identifier: Apache-2.0

package rbac

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	v1udpatypepb "github.com/cncf/xds/go/udpa/type/v1"
	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3streampb "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/audit_loggers/stream/v3"

	"github.com/proxyless/xds/resources"
)

// StdoutAuditLoggerName is the name of the standard audit logger of gRFC
// A59, "stdout_logger": the builder of the logger configs whose
// typed_config is an envoy.extensions.rbac.audit_loggers.stream.v3.StdoutAuditLog.
const StdoutAuditLoggerName = "stdout_logger"

// NewStdoutAuditLogger returns the builder of the standard audit logger
// of gRFC A59, named StdoutAuditLoggerName, writing to w (nil: os.Stdout).
// Its loggers write each event as one line of JSON, for example
//
//	{"grpc_audit_log":{"rpc_method":"/pkg.Service/Foo","principal":"spiffe://foo/user1","policy_name":"envoy.filters.http.rbac","matched_rule":"admin_access","authorized":true,"timestamp":"2006-01-02T15:04:05.999999999Z"}}
//
// (the format of grpc-go's stdout logger), one write per line, serialized
// across the loggers of the builder. Its config takes no fields. The
// servers' built-in builder writes to os.Stdout; give one writing
// elsewhere with their WithAuditLoggers option.
func NewStdoutAuditLogger(w io.Writer) audit.LoggerBuilder {
	if w == nil {
		w = os.Stdout
	}
	return &stdoutBuilder{w: w}
}

// stdoutBuilder builds stdout loggers; its mutex serializes their writes.
type stdoutBuilder struct {
	mu sync.Mutex
	w  io.Writer // guarded by mu
}

type stdoutConfig struct{ audit.LoggerConfig }

func (b *stdoutBuilder) Name() string { return StdoutAuditLoggerName }

// ParseLoggerConfig accepts any config: StdoutAuditLog has no fields.
func (b *stdoutBuilder) ParseLoggerConfig(json.RawMessage) (audit.LoggerConfig, error) {
	return stdoutConfig{}, nil
}

func (b *stdoutBuilder) Build(audit.LoggerConfig) audit.Logger { return stdoutLogger{b} }

type stdoutLogger struct{ b *stdoutBuilder }

// stdoutEvent is the JSON form of an audit.Event (gRFC A59).
type stdoutEvent struct {
	Method      string `json:"rpc_method"`
	Principal   string `json:"principal"`
	PolicyName  string `json:"policy_name"`
	MatchedRule string `json:"matched_rule"`
	Authorized  bool   `json:"authorized"`
	Timestamp   string `json:"timestamp"`
}

// Log writes e as a line of JSON.
func (l stdoutLogger) Log(e *audit.Event) {
	line, err := json.Marshal(map[string]stdoutEvent{"grpc_audit_log": {
		Method:      e.FullMethodName,
		Principal:   e.Principal,
		PolicyName:  e.PolicyName,
		MatchedRule: e.MatchedRule,
		Authorized:  e.Authorized,
		Timestamp:   time.Now().Format(time.RFC3339Nano),
	}})
	if err != nil {
		return // strings and a bool always marshal
	}
	line = append(line, '\n')
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	_, _ = l.b.w.Write(line)
}

// auditConfig is the audit logging of one RBAC filter config (gRFC A59):
// when to log and the loggers.
type auditConfig struct {
	condition resources.RBACAuditCondition
	loggers   []audit.Logger
}

// buildAudit builds the loggers of opts with the builders by name: a
// config of a type no builder serves is skipped when is_optional and an
// error otherwise; a config a builder rejects is an error even when
// optional (gRFC A59). It returns nil when nothing is to be logged.
func buildAudit(opts *resources.RBACAudit, byName map[string]audit.LoggerBuilder) (*auditConfig, error) {
	if opts == nil || opts.Condition == resources.RBACAuditNone {
		return nil, nil
	}
	ac := &auditConfig{condition: opts.Condition}
	for i, lc := range opts.Loggers {
		name, cfg, err := auditLoggerConfig(lc.Config)
		if err != nil {
			return nil, fmt.Errorf("audit_logging_options.logger_configs[%d]: %w", i, err)
		}
		b := byName[name]
		if b == nil {
			if lc.Optional {
				continue
			}
			return nil, fmt.Errorf("audit_logging_options.logger_configs[%d]: no audit logger %q (give one with the WithAuditLoggers option of the server)", i, name)
		}
		c, err := b.ParseLoggerConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("audit_logging_options.logger_configs[%d]: audit logger %q: %w", i, name, err)
		}
		ac.loggers = append(ac.loggers, b.Build(c))
	}
	if len(ac.loggers) == 0 {
		return nil, nil
	}
	return ac, nil
}

// auditLoggerConfig returns the builder name and JSON config of an audit
// logger's typed_config: StdoutAuditLog is the standard logger; a
// TypedStruct (xds or udpa) names its builder by the last path segment of
// its type_url and gives its value as config. Other types name the
// builder by their full message name, which no builder has unless the
// application gave one of that name.
func auditLoggerConfig(tc *anypb.Any) (name string, cfg json.RawMessage, err error) {
	if tc == nil {
		return "", nil, fmt.Errorf("audit_logger.typed_config: missing")
	}
	var (
		typeURL string
		value   *structpb.Struct
	)
	switch {
	case tc.MessageIs((*v3streampb.StdoutAuditLog)(nil)):
		m := &v3streampb.StdoutAuditLog{}
		if err := proto.Unmarshal(tc.GetValue(), m); err != nil {
			return "", nil, fmt.Errorf("audit_logger.typed_config: decoding StdoutAuditLog: %w", err)
		}
		cfg, err := protojson.Marshal(m)
		return StdoutAuditLoggerName, cfg, err
	case tc.MessageIs((*v3xdstypepb.TypedStruct)(nil)):
		ts := &v3xdstypepb.TypedStruct{}
		if err := proto.Unmarshal(tc.GetValue(), ts); err != nil {
			return "", nil, fmt.Errorf("audit_logger.typed_config: decoding TypedStruct: %w", err)
		}
		typeURL, value = ts.GetTypeUrl(), ts.GetValue()
	case tc.MessageIs((*v1udpatypepb.TypedStruct)(nil)):
		ts := &v1udpatypepb.TypedStruct{}
		if err := proto.Unmarshal(tc.GetValue(), ts); err != nil {
			return "", nil, fmt.Errorf("audit_logger.typed_config: decoding TypedStruct: %w", err)
		}
		typeURL, value = ts.GetTypeUrl(), ts.GetValue()
	default:
		typeURL = tc.GetTypeUrl()
	}
	name = typeURL[strings.LastIndex(typeURL, "/")+1:]
	if name == "" {
		return "", nil, fmt.Errorf("audit_logger.typed_config: type URL %q names no audit logger", typeURL)
	}
	cfg = json.RawMessage("{}")
	if value != nil {
		if cfg, err = protojson.Marshal(value); err != nil {
			return "", nil, fmt.Errorf("audit_logger.typed_config: %w", err)
		}
	}
	return name, cfg, nil
}

// log sends the event of an RBAC decision to the loggers when the
// condition says so.
func (ac *auditConfig) log(e *audit.Event) {
	switch ac.condition {
	case resources.RBACAuditOnDeny:
		if e.Authorized {
			return
		}
	case resources.RBACAuditOnAllow:
		if !e.Authorized {
			return
		}
	case resources.RBACAuditOnDenyAndAllow:
	default:
		return
	}
	for _, l := range ac.loggers {
		l.Log(e)
	}
}
