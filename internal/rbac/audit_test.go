// SPDX-License-Identifier: Apache-2.0

package rbac

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3streampb "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/audit_loggers/stream/v3"

	"github.com/proxyless/xds/resources"
)

func loggerConfig(t testing.TB, tc *anypb.Any, optional bool) *v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig {
	t.Helper()
	return &v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{
		AuditLogger: &v3corepb.TypedExtensionConfig{Name: "logger", TypedConfig: tc},
		IsOptional:  optional,
	}
}

// stdoutLoggerConfig is the logger config of the standard stdout logger.
func stdoutLoggerConfig(t testing.TB) *v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig {
	t.Helper()
	a, err := anypb.New(&v3streampb.StdoutAuditLog{})
	if err != nil {
		t.Fatal(err)
	}
	return loggerConfig(t, a, false)
}

// typedStructConfig is the logger config of a custom logger named by the
// TypedStruct's type URL, with value as its config.
func typedStructConfig(t testing.TB, typeURL string, value map[string]any, optional bool) *v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig {
	t.Helper()
	ts := &v3xdstypepb.TypedStruct{TypeUrl: typeURL}
	if value != nil {
		s, err := structpb.NewStruct(value)
		if err != nil {
			t.Fatal(err)
		}
		ts.Value = s
	}
	a, err := anypb.New(ts)
	if err != nil {
		t.Fatal(err)
	}
	return loggerConfig(t, a, optional)
}

// recordingBuilder builds loggers that record events and the configs
// they were built with; a config with "fail" is rejected.
type recordingBuilder struct {
	name    string
	configs []string
	events  []*audit.Event
}

type recordingConfig struct {
	audit.LoggerConfig
	raw string
}

func (b *recordingBuilder) Name() string { return b.name }

func (b *recordingBuilder) ParseLoggerConfig(cfg json.RawMessage) (audit.LoggerConfig, error) {
	if strings.Contains(string(cfg), "fail") {
		return nil, errors.New("bad config")
	}
	return recordingConfig{raw: string(cfg)}, nil
}

func (b *recordingBuilder) Build(c audit.LoggerConfig) audit.Logger {
	b.configs = append(b.configs, c.(recordingConfig).raw)
	return recordingLogger{b}
}

type recordingLogger struct{ b *recordingBuilder }

func (l recordingLogger) Log(e *audit.Event) { l.b.events = append(l.b.events, e) }

// TestBuildAudit checks the audit logger configs of gRFC A59: the stdout
// logger, a custom logger from a TypedStruct with its config as JSON, an
// unknown logger (skipped if optional, else an error), a config the
// builder rejects (an error even if optional), and the conditions.
func TestBuildAudit(t *testing.T) {
	var out bytes.Buffer
	custom := &recordingBuilder{name: "my_logger"}
	byName := map[string]audit.LoggerBuilder{StdoutAuditLoggerName: NewStdoutAuditLogger(&out), "my_logger": custom}
	opts := func(cond v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditCondition, cfgs ...*v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig) *v3rbacconfigpb.RBAC_AuditLoggingOptions {
		return &v3rbacconfigpb.RBAC_AuditLoggingOptions{AuditCondition: cond, LoggerConfigs: cfgs}
	}

	ac, err := buildAudit(decodedAudit(t, opts(v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY,
		stdoutLoggerConfig(t),
		typedStructConfig(t, "type.googleapis.com/my_logger", map[string]any{"level": "high"}, false),
		typedStructConfig(t, "example.com/not_registered", nil, true),
	)), byName)
	if err != nil {
		t.Fatalf("buildAudit: %v", err)
	}
	if len(ac.loggers) != 2 || len(custom.configs) != 1 || custom.configs[0] != `{"level":"high"}` {
		t.Fatalf("%d loggers, custom configs %q; want 2 loggers, the custom one built with its JSON config", len(ac.loggers), custom.configs)
	}
	ac.log(&audit.Event{FullMethodName: "/a/b", Authorized: true})
	ac.log(&audit.Event{FullMethodName: "/a/c", PolicyName: "rbac", MatchedRule: "r", Principal: "spiffe://x/y", Authorized: false})
	if len(custom.events) != 1 || custom.events[0].FullMethodName != "/a/c" {
		t.Errorf("ON_DENY logged %+v, want the denied event only", custom.events)
	}
	var line map[string]map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("stdout logger wrote %q: %v", out.String(), err)
	}
	if e := line["grpc_audit_log"]; e["rpc_method"] != "/a/c" || e["principal"] != "spiffe://x/y" || e["policy_name"] != "rbac" || e["matched_rule"] != "r" || e["authorized"] != false || e["timestamp"] == "" {
		t.Errorf("stdout logger line %s", out.String())
	}

	for _, tc := range []struct {
		name    string
		opts    *v3rbacconfigpb.RBAC_AuditLoggingOptions
		wantErr string
	}{
		{name: "unknown logger", opts: opts(v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_ALLOW, typedStructConfig(t, "x/unknown", nil, false)), wantErr: `no audit logger "unknown"`},
		{name: "rejected config of an optional logger", opts: opts(v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_ALLOW, typedStructConfig(t, "x/my_logger", map[string]any{"fail": true}, true)), wantErr: "bad config"},
		{name: "no typed config", opts: opts(v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_ALLOW, loggerConfig(t, nil, false)), wantErr: "typed_config: missing"},
	} {
		if _, err := buildAudit(decodedAudit(t, tc.opts), byName); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: buildAudit() error = %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
	for _, o := range []*v3rbacconfigpb.RBAC_AuditLoggingOptions{nil, opts(v3rbacconfigpb.RBAC_AuditLoggingOptions_NONE, stdoutLoggerConfig(t)), opts(v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY)} {
		if ac, err := buildAudit(decodedAudit(t, o), byName); ac != nil || err != nil {
			t.Errorf("buildAudit(%v) = %v, %v; want nothing to log", o, ac, err)
		}
	}

	custom.events = nil
	for cond, want := range map[v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditCondition]int{
		v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_ALLOW:          1,
		v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW: 2,
	} {
		custom.events = nil
		ac, err := buildAudit(decodedAudit(t, opts(cond, typedStructConfig(t, "x/my_logger", nil, false))), byName)
		if err != nil {
			t.Fatal(err)
		}
		ac.log(&audit.Event{Authorized: true})
		ac.log(&audit.Event{Authorized: false})
		if len(custom.events) != want {
			t.Errorf("%s: %d events logged, want %d", cond, len(custom.events), want)
		}
	}
}

// decodedAudit returns opts as package resources decodes them: the audit
// logging of ALLOW rules.
func decodedAudit(t *testing.T, opts *v3rbacconfigpb.RBAC_AuditLoggingOptions) *resources.RBACAudit {
	t.Helper()
	return decodedRules(t, &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_ALLOW, AuditLoggingOptions: opts}).Audit
}
