// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// validateDir holds the inputs and golden outputs of the validate tests.
var validateDir = filepath.Join("testdata", "validate")

func mustMarshalAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func socket(host string, port uint32) *v3corepb.Address {
	return &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
		Address: host, PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port},
	}}}
}

// binaryResponse is testdata/validate/endpoints.bin: a binary EDS
// DiscoveryResponse with a valid and an invalid ClusterLoadAssignment.
func binaryResponse(t *testing.T) []byte {
	locality := func(zone string, weight uint32, host string) *v3endpointpb.LocalityLbEndpoints {
		return &v3endpointpb.LocalityLbEndpoints{
			Locality:            &v3corepb.Locality{Zone: zone},
			LoadBalancingWeight: wrapperspb.UInt32(weight),
			LbEndpoints: []*v3endpointpb.LbEndpoint{{HostIdentifier: &v3endpointpb.LbEndpoint_Endpoint{Endpoint: &v3endpointpb.Endpoint{
				Address: socket(host, 80),
			}}}},
		}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&v3discoverypb.DiscoveryResponse{
		VersionInfo: "7",
		TypeUrl:     "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
		Resources: []*anypb.Any{
			mustMarshalAny(t, &v3endpointpb.ClusterLoadAssignment{ClusterName: "eds-a", Endpoints: []*v3endpointpb.LocalityLbEndpoints{locality("a", 1, "10.0.0.1")}}),
			mustMarshalAny(t, &v3endpointpb.ClusterLoadAssignment{ClusterName: "eds-b", Endpoints: []*v3endpointpb.LocalityLbEndpoints{
				locality("a", 1, "10.0.0.1"), locality("b", 1, "10.0.0.1"),
			}}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// binaryAny is testdata/validate/cluster.bin: one Cluster, binary, in an
// Any.
func binaryAny(t *testing.T) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(mustMarshalAny(t, &v3clusterpb.Cluster{
		Name:                 "static",
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkBinaryTestdata compares (or with -update writes) the binary inputs,
// which are generated.
func checkBinaryTestdata(t *testing.T) {
	t.Helper()
	for name, b := range map[string][]byte{"endpoints.bin": binaryResponse(t), "cluster.bin": binaryAny(t)} {
		path := filepath.Join(validateDir, name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s (run go test -update to create it): %v", path, err)
		}
		if string(got) != string(b) {
			t.Fatalf("%s is stale (run go test -update)", path)
		}
	}
}

// TestValidate_Golden runs validate over every input of testdata/validate
// (protojson of a DiscoveryResponse, a stream of protojson resources and
// arrays, proto text of an Any, binary DiscoveryResponse and Any) and
// compares the verdicts with the golden files.
func TestValidate_Golden(t *testing.T) {
	checkBinaryTestdata(t)
	inputs := []string{"response.json", "resources.json", "cluster.txtpb", "endpoints.bin", "cluster.bin"}
	args := func(output string) []string {
		a := []string{"validate", "--output", output}
		for _, in := range inputs {
			a = append(a, filepath.Join(validateDir, in))
		}
		return a
	}
	for _, tc := range []struct{ output, golden string }{
		{"text", "want.txt"},
		{"json", "want.jsonl"},
	} {
		t.Run(tc.output, func(t *testing.T) {
			code, stdout, stderr := runSync(testContext(t), args(tc.output)...)
			if code != exitFailure {
				t.Errorf("exit code = %d, want %d (invalid resources); stderr: %s", code, exitFailure, stderr)
			}
			if want := "xdsctl: 7 of 10 resources are invalid\n"; stderr != want {
				t.Errorf("stderr = %q, want %q", stderr, want)
			}
			// Paths differ between systems; the golden files use "/".
			checkGolden(t, filepath.Join("validate", tc.golden), []byte(filepath.ToSlash(stdout)))
		})
	}
}

// TestValidate_ExitCodes checks the exit status and the error line: 0 when
// every resource is valid, 1 when one is invalid, 2 when an input cannot
// be read.
func TestValidate_ExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	validText, err := prototext.Marshal(&v3discoverypb.DiscoveryResponse{Resources: []*anypb.Any{
		mustMarshalAny(t, &v3endpointpb.ClusterLoadAssignment{ClusterName: "e"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	valid := write("valid.txtpb", string(validText))
	invalid := filepath.Join(validateDir, "cluster.txtpb")

	cases := []struct {
		name       string
		give       []string
		wantCode   int
		wantStdout string
		wantStderr string // substring
	}{
		{name: "all valid", give: []string{valid}, wantCode: exitOK, wantStdout: "VALID ClusterLoadAssignment e\n"},
		{name: "one invalid", give: []string{valid, invalid}, wantCode: exitFailure, wantStderr: "xdsctl: 1 of 2 resources are invalid"},
		{
			name:       "missing file, others still checked",
			give:       []string{filepath.Join(dir, "missing.json"), valid},
			wantCode:   exitUsage,
			wantStdout: "VALID ClusterLoadAssignment e\n",
			wantStderr: "missing.json: no such file or directory",
		},
		{name: "bad JSON", give: []string{write("bad.json", `{"@type": `)}, wantCode: exitUsage, wantStderr: "bad.json: JSON value 0"},
		{name: "JSON of an unknown shape", give: []string{write("odd.json", `{"name": "x"}`)}, wantCode: exitUsage, wantStderr: `neither a resource with an "@type" nor a DiscoveryResponse`},
		{name: "unknown JSON field", give: []string{write("typo.json", `{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "nmae": "x"}`)}, wantCode: exitUsage, wantStderr: "typo.json"},
		{name: "empty file", give: []string{write("empty.txt", "\n")}, wantCode: exitUsage, wantStderr: "empty.txt: empty input"},
		{name: "garbage", give: []string{write("garbage.bin", "\xff\xff\xff")}, wantCode: exitUsage, wantStderr: "garbage.bin: not a binary Any or DiscoveryResponse"},
		{name: "no file", give: nil, wantCode: exitUsage, wantStderr: "xdsctl: validate: no FILE given"},
		{name: "bad output flag", give: []string{"--output", "xml", valid}, wantCode: exitUsage, wantStderr: `validate: invalid value "xml" for flag --output: want text, json or yaml`},
		{name: "unknown flag, as typed", give: []string{"--outptu", "json", valid}, wantCode: exitUsage, wantStderr: "flag provided but not defined: --outptu"},
		{name: "yaml", give: []string{"-o", "yaml", valid}, wantCode: exitOK, wantStdout: "---\nfile: " + valid + "\nindex: 0\ntype_url: type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment\ntype: ClusterLoadAssignment\nname: e\nvalid: true\n"},
		{name: "unlinked optional filter", give: []string{write("buffer-optional.json", listenerWithFilter("true"))}, wantCode: exitOK, wantStdout: "VALID Listener l\n"},
		{name: "unlinked required filter", give: []string{write("buffer-required.json", listenerWithFilter("false"))}, wantCode: exitFailure, wantStdout: "INVALID Listener l: api_listener.api_listener.http_filters[0]"},
		{name: "unlinked type, misspelled field of a linked one", give: []string{write("buffer-typo.json", strings.Replace(listenerWithFilter("true"), `"name": "l"`, `"nmae": "l"`, 1))}, wantCode: exitUsage, wantStderr: "nmae"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runSync(testContext(t), append([]string{"validate"}, tc.give...)...)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; stderr: %s", code, tc.wantCode, stderr)
			}
			if tc.wantStdout != "" && stdout != tc.wantStdout && !(strings.HasPrefix(stdout, tc.wantStdout) && strings.HasPrefix(tc.wantStdout, "INVALID")) {
				t.Errorf("stdout = %q, want %q", stdout, tc.wantStdout)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tc.wantStderr)
			}
		})
	}
}

// listenerWithFilter returns the protojson of a Listener "l" whose first
// HTTP filter is Envoy's buffer filter, a type xdsctl does not link, with
// is_optional set to optional ("true" or "false").
func listenerWithFilter(optional string) string {
	return `{
  "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
  "name": "l",
  "apiListener": {"apiListener": {
    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
    "rds": {"configSource": {"ads": {}}, "routeConfigName": "r"},
    "httpFilters": [
      {"name": "buffer", "isOptional": ` + optional + `, "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer", "maxRequestBytes": 1024}},
      {"name": "router", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}
    ]
  }}
}`
}

// TestValidate_Help checks that validate is listed and has its help.
func TestValidate_Help(t *testing.T) {
	code, stdout, _ := runSync(testContext(t), "help", "validate")
	if code != exitOK || !strings.Contains(stdout, "Usage: xdsctl validate [--bootstrap FILE] [-o text|json|yaml] FILE...") {
		t.Fatalf("help validate = %d, %q", code, stdout)
	}
	if _, stdout, _ := runSync(testContext(t), "help"); !strings.Contains(stdout, "xdsctl validate [--bootstrap FILE] [-o text|json|yaml] FILE...") {
		t.Fatalf("help does not list validate:\n%s", stdout)
	}
}

// TestValidate_Bootstrap checks that validate --bootstrap FILE checks the
// certificate provider instances a Cluster names against the bootstrap's
// certificate_providers (gRFC A29), and that without it they are not
// checked.
func TestValidate_Bootstrap(t *testing.T) {
	dir := t.TempDir()
	cluster := testutil.WithUpstreamTLS(testutil.Cluster("tls", ""), testutil.UpstreamTLSOptions{RootInstance: "roots", IdentityInstance: "mine"})
	js, err := protojson.Marshal(testutil.MarshalAny(cluster))
	if err != nil {
		t.Fatal(err)
	}
	resourcesFile := filepath.Join(dir, "cluster.json")
	bootstrapFile := filepath.Join(dir, "bootstrap.json")
	b, err := testutil.WithCertificateProviders([]byte(`{"xds_servers":[{"server_uri":"x","channel_creds":[{"type":"insecure"}]}]}`),
		map[string]testutil.FileWatcher{"roots": {CACertificateFile: "/ca.pem"}})
	if err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string][]byte{resourcesFile: js, bootstrapFile: b} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runSync(testContext(t), "validate", resourcesFile)
	if code != exitOK || stdout != "VALID Cluster tls\n" {
		t.Errorf("validate without --bootstrap = %d, %q (stderr %q); want 0, VALID", code, stdout, stderr)
	}
	code, stdout, stderr = runSync(testContext(t), "validate", "--bootstrap", bootstrapFile, resourcesFile)
	want := `INVALID Cluster tls: transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: identity certificate provider instance "mine" is not in the bootstrap's certificate_providers` + "\n"
	if code != exitFailure || stdout != want {
		t.Errorf("validate --bootstrap = %d, %q (stderr %q); want 1, %q", code, stdout, stderr, want)
	}
	if code, _, stderr := runSync(testContext(t), "validate", "--bootstrap", filepath.Join(dir, "missing.json"), resourcesFile); code != exitFailure || !strings.Contains(stderr, "reading the bootstrap") {
		t.Errorf("validate --bootstrap of a missing file = %d, stderr %q; want 1 and the reading error", code, stderr)
	}
}
