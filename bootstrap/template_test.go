// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"errors"
	"testing"
)

// TestExpandTemplate checks, with the examples verified against
// grpc-go's PopulateResourceTemplate.
func TestExpandTemplate(t *testing.T) {
	const xdstp = "xdstp://auth/envoy.config.listener.v3.Listener/%s"
	tests := []struct {
		name         string
		giveTemplate string
		giveTarget   string
		want         string
	}{
		{name: "host port unchanged", giveTemplate: xdstp, giveTarget: "foo.example.com:8080", want: "xdstp://auth/envoy.config.listener.v3.Listener/foo.example.com:8080"},
		{name: "semicolon and comma escaped", giveTemplate: xdstp, giveTarget: "a;b,c", want: "xdstp://auth/envoy.config.listener.v3.Listener/a%3Bb%2Cc"},
		{name: "slash kept space escaped", giveTemplate: xdstp, giveTarget: "svc/with space", want: "xdstp://auth/envoy.config.listener.v3.Listener/svc/with%20space"},
		{name: "ipv6 brackets escaped", giveTemplate: xdstp, giveTarget: "[::1]:80", want: "xdstp://auth/envoy.config.listener.v3.Listener/%5B::1%5D:80"},
		{name: "query characters escaped", giveTemplate: xdstp, giveTarget: "a?b=c#d", want: "xdstp://auth/envoy.config.listener.v3.Listener/a%3Fb=c%23d"},
		{name: "percent escaped", giveTemplate: xdstp, giveTarget: "100%", want: "xdstp://auth/envoy.config.listener.v3.Listener/100%25"},
		{name: "empty target", giveTemplate: xdstp, giveTarget: "", want: "xdstp://auth/envoy.config.listener.v3.Listener/"},
		{name: "every %s replaced", giveTemplate: "xdstp://auth/t/%s/%s", giveTarget: "a b", want: "xdstp://auth/t/a%20b/a%20b"},
		{name: "non-xdstp not encoded", giveTemplate: "%s", giveTarget: "svc/with space;a,b", want: "svc/with space;a,b"},
		{name: "non-xdstp prefix and suffix", giveTemplate: "grpc/server?xds.resource.listening_address=%s", giveTarget: "[::]:80", want: "grpc/server?xds.resource.listening_address=[::]:80"},
		{name: "xdstp prefix is case sensitive", giveTemplate: "XDSTP://auth/%s", giveTarget: "a b", want: "XDSTP://auth/a b"},
		{name: "no %s", giveTemplate: "xdstp://auth/fixed", giveTarget: "a b", want: "xdstp://auth/fixed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpandTemplate(tt.giveTemplate, tt.giveTarget); got != tt.want {
				t.Fatalf("ExpandTemplate(%q, %q) = %q, want %q", tt.giveTemplate, tt.giveTarget, got, tt.want)
			}
		})
	}
}

// TestConfig_ListenerResourceName checks the target → Listener name mapping
// of with the templates of.
func TestConfig_ListenerResourceName(t *testing.T) {
	c := mustParse(t, readTestdata(t, "valid", "authorities"))
	withDefault := mustParse(t, readTestdata(t, "valid", "templates_and_providers"))
	tests := []struct {
		name          string
		cfg           *Config
		giveAuthority string
		giveTarget    string
		want          string
		wantErr       string
	}{
		{name: "default template", cfg: c, giveTarget: "svc.example.com:8080", want: "svc.example.com:8080"},
		{name: "default template not encoded", cfg: c, giveTarget: "a b", want: "a b"},
		{
			name: "xdstp default template encoded", cfg: withDefault, giveTarget: "a b",
			want: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/a%20b",
		},
		{
			name: "authority template", cfg: c, giveAuthority: "xds.example.com", giveTarget: "svc",
			want: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/client/svc",
		},
		{
			// the default template has the escaped authority.
			name: "authority default template", cfg: c, giveAuthority: "a b", giveTarget: "[::1]:80",
			want: "xdstp://a%20b/envoy.config.listener.v3.Listener/%5B::1%5D:80",
		},
		{
			name: "unknown authority", cfg: c, giveAuthority: "nowhere", giveTarget: "svc",
			wantErr: `bootstrap: authority "nowhere" is not in the bootstrap's authorities`,
		},
		{
			// A hand-built Config without a default template gets "%s".
			name: "hand-built config", cfg: &Config{}, giveTarget: "svc", want: "svc",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.ListenerResourceName(tt.giveAuthority, tt.giveTarget)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrUnknownAuthority) {
					t.Fatalf("ListenerResourceName(%q, %q) = %q, %v, want error %q matching ErrUnknownAuthority", tt.giveAuthority, tt.giveTarget, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ListenerResourceName(%q, %q) = %q, %v, want %q, nil", tt.giveAuthority, tt.giveTarget, got, err, tt.want)
			}
		})
	}
}
