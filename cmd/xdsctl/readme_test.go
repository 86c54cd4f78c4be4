// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// readmeSampleLines returns the xdsctl command lines of the README's
// "Looking at a control plane" section that use the samples of
// examples/resources, each with the exit status its comment states.
func readmeSampleLines(t *testing.T) (lines []string, codes []int) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Looking at a control plane\n")
	if !ok {
		t.Fatal(`README.md has no "Looking at a control plane" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	exitRE := regexp.MustCompile(`exit (\d)`)
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "xdsctl ") || !strings.Contains(line, "examples/resources") {
			continue
		}
		cmd, comment, _ := strings.Cut(line, "#")
		m := exitRE.FindStringSubmatch(comment)
		if m == nil {
			t.Errorf("README line %q: its comment states no exit status", line)
			continue
		}
		code, _ := strconv.Atoi(m[1])
		lines, codes = append(lines, strings.TrimSpace(cmd)), append(codes, code)
	}
	if len(lines) == 0 {
		t.Fatal("the README shows no xdsctl command on examples/resources")
	}
	return lines, codes
}

// TestREADME_Samples runs the README's xdsctl lines on the samples of
// examples/resources as a shell would from the repository's root (globs
// expanded; /tmp/b.json replaced by a bootstrap with the certificate
// provider instance of demo --mtls) and checks the exit status each line
// states: the samples exist, validate reads every format they use (the
// formats of --file), and --file reads the mesh.
func TestREADME_Samples(t *testing.T) {
	lines, codes := readmeSampleLines(t)
	bootstrapFile := filepath.Join(t.TempDir(), "b.json")
	if err := os.WriteFile(bootstrapFile, []byte(`{
		"xds_servers": [{"server_uri": "localhost:1", "channel_creds": [{"type": "insecure"}]}],
		"certificate_providers": {"`+demoInstance+`": {"plugin_name": "file_watcher", "config": {
			"certificate_file": "c.pem", "private_key_file": "k.pem", "ca_certificate_file": "ca.pem"}}}
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		t.Run(line, func(t *testing.T) {
			var args []string
			for _, a := range strings.Fields(strings.TrimPrefix(line, "xdsctl ")) {
				switch {
				case a == "/tmp/b.json":
					args = append(args, bootstrapFile)
				case strings.HasPrefix(a, "examples/"):
					p := filepath.Join(repoRoot, a)
					matches, err := filepath.Glob(p)
					if err != nil || len(matches) == 0 {
						t.Fatalf("README names %s, which does not exist", a)
					}
					args = append(args, matches...)
				default:
					args = append(args, a)
				}
			}
			code, stdout, stderr := runSync(testContext(t), args...)
			if code != codes[i] {
				t.Errorf("xdsctl %q = %d, the README says %d; stdout:\n%s\nstderr: %s", args, code, codes[i], stdout, stderr)
			}
		})
	}
}

// TestValidate_FileFormats checks that validate reads each file of the
// sample mesh, which --file reads too, whatever its format, and finds its
// resources.
func TestValidate_FileFormats(t *testing.T) {
	want := map[string][]string{
		"listeners.yaml":  {"VALID Listener svc"},
		"routes.json":     {"VALID RouteConfiguration route-svc"},
		"clusters.textpb": {"VALID Cluster cluster-svc", "VALID Cluster cluster-svc-canary"},
		"endpoints.yaml":  {"VALID ClusterLoadAssignment eds-svc", "VALID ClusterLoadAssignment eds-svc-canary"},
	}
	for name, lines := range want {
		path := filepath.Join(repoRoot, "examples", "resources", "mesh", name)
		code, stdout, stderr := runSync(testContext(t), "validate", path)
		if code != exitOK {
			t.Errorf("validate %s = %d, stderr %q; want 0", name, code, stderr)
		}
		if got := strings.TrimSuffix(stdout, "\n"); got != strings.Join(lines, "\n") {
			t.Errorf("validate %s printed\n%s\nwant\n%s", name, got, strings.Join(lines, "\n"))
		}
	}
}
