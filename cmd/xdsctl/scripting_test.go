// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// This file checks what scripts rely on: every exit code and every
// output format of every command.

// newMixedServer serves the chain of newChainServer plus an invalid
// Cluster "bad" (a STATIC cluster, which gRPC rejects), and returns the
// path of its bootstrap.
func newMixedServer(t *testing.T) string {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{8080}})
	chain.Version = "1"
	chain.Clusters = append(chain.Clusters, &v3clusterpb.Cluster{
		Name:                 "bad",
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC},
	})
	ms.Update("", chain)
	return writeBootstrap(t, ms, testutil.BootstrapOptions{})
}

// TestStatus_ExitCodes checks each exit code of status, that the dump is
// printed with every one of them, and that stderr names the resources at
// fault. ACKED answers come at once, well before the default --wait.
func TestStatus_ExitCodes(t *testing.T) {
	bootstrapFile := newMixedServer(t)
	silent := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	silentFile := writeBootstrap(t, silent, testutil.BootstrapOptions{})

	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantRows   [][]string // nil: not checked
		wantStderr string     // "" means none
	}{
		{
			name:     "ACKED",
			args:     []string{"--bootstrap", bootstrapFile, "listener/svc", "cluster/cluster-svc"},
			wantCode: exitOK,
			wantRows: [][]string{{"Listener", "svc", "ACKED", "1", "-"}, {"Cluster", "cluster-svc", "ACKED", "1", "-"}},
		},
		{
			name:     "wildcard ACKED",
			args:     []string{"--bootstrap", bootstrapFile, "listener/*"},
			wantCode: exitOK,
			wantRows: [][]string{{"Listener", "svc", "ACKED", "1", "-"}},
		},
		{
			name:       "NACKED",
			args:       []string{"--bootstrap", bootstrapFile, "cluster/bad"},
			wantCode:   exitNACKed,
			wantStderr: "xdsctl: status: cluster/bad is NACKED",
		},
		{
			name:       "DOES_NOT_EXIST",
			args:       []string{"--bootstrap", bootstrapFile, "--resource-timeout", "1s", "listener/svc", "listener/typo"},
			wantCode:   exitDoesNotExist,
			wantRows:   [][]string{{"Listener", "svc", "ACKED", "1", "-"}, {"Listener", "typo", "DOES_NOT_EXIST", "-", "-"}},
			wantStderr: "xdsctl: status: listener/typo does not exist",
		},
		{
			name:       "not received",
			args:       []string{"--bootstrap", silentFile, "--wait", "100ms", "listener/svc"},
			wantCode:   exitNotReceived,
			wantRows:   [][]string{{"Listener", "svc", "REQUESTED", "-", "-"}},
			wantStderr: "xdsctl: status: listener/svc was not received within 100ms",
		},
		{
			name:       "wildcard not received",
			args:       []string{"--bootstrap", silentFile, "--wait", "100ms", "cds/*"},
			wantCode:   exitNotReceived,
			wantStderr: "xdsctl: status: cluster/* was not received within 100ms",
		},
		{
			name:       "NACKED wins over DOES_NOT_EXIST",
			args:       []string{"--bootstrap", bootstrapFile, "--resource-timeout", "1s", "cluster/missing", "cluster/bad"},
			wantCode:   exitNACKed,
			wantStderr: "cluster/missing does not exist; cluster/bad is NACKED",
		},
		{
			name:       "unreachable server",
			args:       []string{"--server", "127.0.0.1:1", "listener/svc"},
			wantCode:   exitFailure,
			wantStderr: "xdsctl: cannot reach the management server",
		},
		{
			name:       "usage",
			args:       []string{"--bootstrap", bootstrapFile, "--wait", "-1s", "listener/svc"},
			wantCode:   exitUsage,
			wantStderr: "--wait must not be negative",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runSync(testContext(t), append([]string{"status"}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("status = %d, want %d; stdout:\n%s\nstderr: %s", code, tc.wantCode, stdout, stderr)
			}
			if tc.wantStderr == "" && stderr != "" {
				t.Errorf("stderr = %q, want nothing", stderr)
			}
			if tc.wantStderr != "" {
				checkOneLineError(t, stderr, tc.wantStderr)
			}
			if tc.wantRows != nil {
				if got := tableRows(t, stdout); !equalRows(got, tc.wantRows) {
					t.Errorf("status printed:\n%s\nwant rows %q", stdout, tc.wantRows)
				}
			}
			if tc.wantCode == exitOK {
				// The default --wait is 20s: a settled status must not
				// wait for it.
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("status took %v, want it to return once every resource is ACKED", d)
				}
			}
		})
	}
}

// TestStatus_DefaultWaitCoversTimer checks that the default --wait is
// longer than the does-not-exist timer, so that a typo is reported as
// DOES_NOT_EXIST, not as still REQUESTED.
func TestStatus_DefaultWaitCoversTimer(t *testing.T) {
	for _, timeout := range []time.Duration{0, 100 * time.Millisecond, time.Minute} {
		cf := clientFlags{resourceTimeout: timeout}
		if got, timer := cf.expiry()+statusWaitMargin, cf.expiry(); got <= timer {
			t.Errorf("--resource-timeout %v: default --wait %v, want more than the timer %v", timeout, got, timer)
		}
	}
	if got := (&clientFlags{}).expiry(); got != 15*time.Second {
		t.Errorf("default does-not-exist timer = %v, want the client's 15s", got)
	}
}

// snakeKeyRE matches the keys the output contract allows (output.go):
// snake_case, and protojson's "@type".
var snakeKeyRE = regexp.MustCompile(`^(@type|[a-z0-9]+(_[a-z0-9]+)*)$`)

// checkKeys reports every key of v, at any depth, that is not snake_case.
func checkKeys(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !snakeKeyRE.MatchString(k) {
				t.Errorf("key %q at %s is not snake_case", k, path)
			}
			checkKeys(t, path+"."+k, e)
		}
	case []any:
		for i, e := range v {
			checkKeys(t, fmt.Sprintf("%s[%d]", path, i), e)
		}
	}
}

// checkOutputContract checks the output contract of every command
// (output.go) on out: with json, every line is exactly one JSON object;
// with yaml, the output is a stream of documents, each starting with
// "---" and each one mapping; in both, every key is snake_case. It
// returns the number of records.
func checkOutputContract(t *testing.T, format outputFormat, out string) int {
	t.Helper()
	if out == "" {
		return 0
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("%s output does not end with a newline: %q", format, out)
	}
	var recs []any
	switch format {
	case outputJSON:
		for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			dec := json.NewDecoder(strings.NewReader(line))
			var rec map[string]any
			if err := dec.Decode(&rec); err != nil || rec == nil {
				t.Fatalf("line %d is not one JSON object (%v): %q", i+1, err, line)
			}
			if dec.More() {
				t.Fatalf("line %d holds more than one JSON value: %q", i+1, line)
			}
			recs = append(recs, rec)
		}
	case outputYAML:
		if !strings.HasPrefix(out, "---\n") {
			t.Errorf("YAML output does not start with a document marker:\n%s", out)
		}
		for i, doc := range strings.Split(strings.TrimPrefix(out, "---\n"), "\n---\n") {
			var rec map[string]any
			if err := yaml.Unmarshal([]byte(doc), &rec); err != nil || rec == nil {
				t.Fatalf("YAML document %d is not one mapping (%v):\n%s", i+1, err, doc)
			}
			recs = append(recs, rec)
		}
	default:
		t.Fatalf("checkOutputContract(%s): not a structured format", format)
	}
	for i, rec := range recs {
		checkKeys(t, fmt.Sprintf("record %d", i+1), rec)
	}
	return len(recs)
}

// checkRecords checks the output contract of out (checkOutputContract),
// then decodes its JSON values or YAML documents and checks each with
// check; there must be at least one.
func checkRecords(t *testing.T, format outputFormat, out string, check func(t *testing.T, rec map[string]any)) {
	t.Helper()
	checkOutputContract(t, format, out)
	var dec interface{ Decode(any) error }
	switch format {
	case outputJSON:
		dec = json.NewDecoder(strings.NewReader(out))
	case outputYAML:
		if !strings.HasPrefix(out, "---\n") {
			t.Errorf("YAML output does not start with a document marker:\n%s", out)
		}
		dec = yaml.NewDecoder(strings.NewReader(out))
	default:
		t.Fatalf("checkRecords(%s): not a structured format", format)
	}
	n := 0
	for ; ; n++ {
		var rec map[string]any
		err := dec.Decode(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s output:\n%s\n%v", format, out, err)
		}
		check(t, rec)
	}
	if n == 0 {
		t.Fatalf("no %s records in output %q", format, out)
	}
}

// TestOutputFormats checks the output contract (output.go) of every
// command in every format: text for people; JSON, one object per line and
// nothing else on stdout; YAML, one document per record; snake_case keys
// in both, in the protos printed too (status's ClientConfig, watch's
// resources); and that the records carry what the text shows.
func TestOutputFormats(t *testing.T) {
	_, bootstrapFile := newChainServer(t)
	validFile := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(validFile, []byte(`{"@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", "clusterName": "e"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	type command struct {
		name      string
		args      []string
		running   bool   // runs until stopped, after wantText shows
		wantText  string // in the text output
		checkJSON func(t *testing.T, rec map[string]any)
	}
	field := func(rec map[string]any, path ...string) any {
		var v any = rec
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	commands := []command{
		{
			name: "status", args: []string{"status", "--bootstrap", bootstrapFile, "listener/svc"},
			wantText: "Listener  svc",
			checkJSON: func(t *testing.T, rec map[string]any) {
				gs, _ := rec["generic_xds_configs"].([]any)
				if len(gs) != 1 || field(gs[0].(map[string]any), "client_status") != "ACKED" {
					t.Errorf("status record = %v, want one ACKED generic_xds_configs entry", rec)
				}
			},
		},
		{
			name: "resolve", args: []string{"resolve", "--bootstrap", bootstrapFile, "--once", "svc"},
			wantText: "Listener svc",
			checkJSON: func(t *testing.T, rec map[string]any) {
				routes, _ := field(rec, "config", "virtual_host", "routes").([]any)
				if field(rec, "config", "listener", "name") != "svc" || len(routes) == 0 {
					t.Fatalf("resolve record = %v, want the config of svc", rec)
				}
				if kind := field(routes[0].(map[string]any), "action", "kind"); kind != "cluster" {
					t.Errorf("route action kind = %v, want cluster (routes are objects)", kind)
				}
			},
		},
		{
			name: "watch", args: []string{"watch", "--bootstrap", bootstrapFile, "cds/*"}, running: true,
			wantText: "Cluster cluster-svc",
			checkJSON: func(t *testing.T, rec map[string]any) {
				if rec["event"] != "changed" || rec["name"] != "cluster-svc" || field(rec, "resource", "name") != "cluster-svc" {
					t.Errorf("watch record = %v, want cluster-svc changed", rec)
				}
			},
		},
		{
			// --admin prints a note for people: on stderr with json and yaml.
			name: "demo", args: []string{"demo", "--base-port", "0", "--interval", "1h", "--admin", "127.0.0.1:0"}, running: true,
			wantText: "Listener svc",
			checkJSON: func(t *testing.T, rec map[string]any) {
				if field(rec, "config", "listener", "name") != "svc" {
					t.Errorf("demo record = %v, want the config of svc", rec)
				}
			},
		},
		{
			name: "validate", args: []string{"validate", validFile},
			wantText: "VALID ClusterLoadAssignment e",
			checkJSON: func(t *testing.T, rec map[string]any) {
				if rec["valid"] != true || rec["name"] != "e" {
					t.Errorf("validate record = %v, want e valid", rec)
				}
			},
		},
	}
	for _, c := range commands {
		for _, format := range []outputFormat{outputText, outputJSON, outputYAML} {
			t.Run(c.name+"/"+string(format), func(t *testing.T) {
				ctx := testContext(t)
				args := append(append([]string{}, c.args...), "-o", string(format))
				var stdout string
				if c.running {
					r := startRun(t, args...)
					want := c.wantText
					if format != outputText {
						want = "\n" // one whole record
					}
					waitForOutput(ctx, t, &r.stdout, "a record", containsAll(want))
					if code := r.stop(t); code != exitOK {
						t.Fatalf("xdsctl %q = %d after Ctrl-C, want 0; stderr: %s", args, code, r.stderr.String())
					}
					stdout = r.stdout.String()
				} else {
					var code int
					var stderr string
					code, stdout, stderr = runSync(ctx, args...)
					if code != exitOK {
						t.Fatalf("xdsctl %q = %d, want 0; stderr: %s", args, code, stderr)
					}
				}
				if format == outputText {
					if !strings.Contains(stdout, c.wantText) || json.Valid(bytes.TrimSpace([]byte(stdout))) {
						t.Errorf("text output lacks %q (or is JSON):\n%s", c.wantText, stdout)
					}
					return
				}
				checkRecords(t, format, stdout, c.checkJSON)
			})
		}
	}
}

// TestClientFlags_Server checks --server: a quick look at a management
// server without a bootstrap file, with the node id of --node.
func TestClientFlags_Server(t *testing.T) {
	ctx := testContext(t)
	ms, _ := newChainServer(t)

	code, stdout, stderr := runSync(ctx, "status", "--server", ms.Address(), "--node", "n-42", "--insecure", "listener/svc")
	if code != exitOK {
		t.Fatalf("status --server = %d, stderr %q", code, stderr)
	}
	if got, want := tableRows(t, stdout), [][]string{{"Listener", "svc", "ACKED", "1", "-"}}; !equalRows(got, want) {
		t.Errorf("status printed:\n%s\nwant rows %q", stdout, want)
	}
	reqs := ms.Requests()
	if len(reqs) == 0 || reqs[0].Node.GetId() != "n-42" {
		t.Errorf("the server saw node %v, want id n-42", reqs[0].Node)
	}

	usage := []struct {
		args []string
		want string
	}{
		{[]string{"status", "--node", "n", "listener/svc"}, "--node needs --server"},
		{[]string{"status", "--tls", "listener/svc"}, "--tls needs --server"},
		{[]string{"status", "--server", ms.Address(), "--bootstrap", "b.json", "listener/svc"}, "--server and --bootstrap exclude each other"},
		{[]string{"status", "--server", ms.Address(), "--insecure", "--tls", "listener/svc"}, "--insecure and --tls exclude each other"},
		{[]string{"status", "--server", ms.Address(), "--tls-cert-file", "c.pem", "listener/svc"}, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"watch", "--server", "nohost", "listener/svc"}, `--server: want HOST:PORT, got "nohost"`},
		{[]string{"resolve", "--server", ms.Address(), "--max-recv-msg-size", "-1", "svc"}, "--max-recv-msg-size must not be negative"},
	}
	for _, u := range usage {
		code, _, stderr := runSync(ctx, u.args...)
		if code != exitUsage {
			t.Errorf("xdsctl %q = %d, want %d", u.args, code, exitUsage)
		}
		checkOneLineError(t, stderr, u.want)
	}
}

// TestClientFlags_MaxRecvMsgSize checks that --max-recv-msg-size reaches
// the transport: a limit below the size of every response fails them,
// and the error names the flag (the library names its own option only).
func TestClientFlags_MaxRecvMsgSize(t *testing.T) {
	_, bootstrapFile := newChainServer(t)
	code, _, stderr := runSync(testContext(t), "status", "--bootstrap", bootstrapFile, "--max-recv-msg-size", "16", "listener/svc")
	if code != exitFailure {
		t.Fatalf("status = %d, want %d; stderr %q", code, exitFailure, stderr)
	}
	checkOneLineError(t, stderr, "message larger than the size limit")
	if !strings.Contains(stderr, "limit of 16 bytes") || !strings.Contains(stderr, "(xdsctl: --max-recv-msg-size BYTES)") {
		t.Errorf("stderr %q does not name the limit and the flag", stderr)
	}
}

// TestClientFlags_LogLevelTrace checks that --log-level trace logs whole
// messages, at client.LevelTrace, printed as TRACE.
func TestClientFlags_LogLevelTrace(t *testing.T) {
	_, bootstrapFile := newChainServer(t)
	code, _, stderr := runSync(testContext(t), "status", "--bootstrap", bootstrapFile, "--log-level", "trace", "listener/svc")
	if code != exitOK {
		t.Fatalf("status = %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, `level=TRACE msg="received DiscoveryResponse"`) || !strings.Contains(stderr, "level=DEBUG ") ||
		strings.Contains(stderr, "DEBUG-4") {
		t.Errorf("--log-level trace logged:\n%s\nwant whole messages at TRACE and summaries at DEBUG", stderr)
	}
}

// TestResolve_OnceTimeout checks that resolve --once gives up after
// --timeout with an error that says so, when the server never answers.
func TestResolve_OnceTimeout(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	bootstrapFile := writeBootstrap(t, ms, testutil.BootstrapOptions{})
	code, stdout, stderr := runSync(testContext(t), "resolve", "--bootstrap", bootstrapFile, "--once", "--timeout", "200ms", "svc")
	if code != exitFailure || stdout != "" {
		t.Fatalf("resolve --once = %d, stdout %q; want %d and nothing", code, stdout, exitFailure)
	}
	checkOneLineError(t, stderr, `no complete configuration of Listener "svc" within 200ms (--timeout)`)
}

// TestDemo_SecondTerminal checks the README's first steps: demo
// --bootstrap-out writes a bootstrap with which status sees the demo's
// Listeners (svc, web) ACKED (exit 0) and a typo DOES_NOT_EXIST (exit 4), and Ctrl-C
// ends the demo with exit 0.
func TestDemo_SecondTerminal(t *testing.T) {
	ctx := testContext(t)
	bootstrapFile := filepath.Join(t.TempDir(), "b.json")
	demo := startRun(t, "demo", "--base-port", "0", "--bootstrap-out", bootstrapFile, "--interval", "1h")
	waitForOutput(ctx, t, &demo.stdout, "the bootstrap", containsAll("Bootstrap written to "+bootstrapFile, "xdsctl status --bootstrap "+bootstrapFile+" 'listener/*'"))

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "listener/*")
	if code != exitOK {
		t.Errorf("status 'listener/*' = %d, stderr %q; want 0", code, stderr)
	}
	if got, want := tableRows(t, stdout), [][]string{{"Listener", "svc", "ACKED", "1", "-"}, {"Listener", "web", "ACKED", "1", "-"}}; !equalRows(got, want) {
		t.Errorf("status printed:\n%s\nwant rows %q", stdout, want)
	}
	code, _, stderr = runSync(ctx, "status", "--bootstrap", bootstrapFile, "--resource-timeout", "100ms", "listener/typo")
	if code != exitDoesNotExist {
		t.Errorf("status listener/typo = %d, stderr %q; want %d", code, stderr, exitDoesNotExist)
	}
	if code := demo.stop(t); code != exitOK {
		t.Errorf("demo after Ctrl-C = %d, want 0; stderr: %s", code, demo.stderr.String())
	}
}
