// SPDX-License-Identifier: Apache-2.0

package main

import (
	"regexp"
	"testing"
)

// demoResources match what the demo prints of its mesh, from the Listener
// down to the endpoints. Versions are not pinned: an update may come
// before the first response.
var demoResources = []*regexp.Regexp{
	regexp.MustCompile(`\] Listener svc \(version \d+\): routes via RouteConfiguration "route-svc"\n`),
	regexp.MustCompile(`\n  RouteConfiguration route-svc \(version \d+\): virtual host "svc", domains \[svc\]\n`),
	regexp.MustCompile(`\n    prefix "/helloworld\.Greeter/" -> weighted clusters "cluster-svc" \(weight 90\), "cluster-svc-canary" \(weight 10\)\n`),
	regexp.MustCompile(`\n  Cluster cluster-svc \(version \d+\): EDS, EDS service name "eds-svc",`),
	regexp.MustCompile(`\n  Cluster cluster-svc-canary \(version \d+\): EDS, EDS service name "eds-svc-canary",`),
	regexp.MustCompile(`\n    ClusterLoadAssignment eds-svc \(version \d+\): 3 endpoints in 2 localities\n`),
	regexp.MustCompile(`\n      priority 1, locality us-west1/us-west1-a, weight 1\n`),
	regexp.MustCompile(`\n        127\.0\.0\.1:\d+ weight=1 health=HEALTHY\n`),
	regexp.MustCompile(`\n    ClusterLoadAssignment eds-svc-canary \(version \d+\): 1 endpoint in 1 locality\n`),
}

// missing returns the patterns of want that s does not match.
func missing(s string, want ...*regexp.Regexp) []string {
	var out []string
	for _, re := range want {
		if !re.MatchString(s) {
			out = append(out, re.String())
		}
	}
	return out
}

// TestDemo_Duration checks that the demo prints the resolved mesh,
// changes endpoints every --interval and prints the configurations that
// have the change, and exits 0 on its own after --duration.
func TestDemo_Duration(t *testing.T) {
	r := startRun(t, "demo", "--base-port", "0", "--duration", "1s", "--interval", "100ms")
	if code := r.wait(t); code != exitOK {
		t.Fatalf("demo = %d, want 0; stderr: %s", code, r.stderr.String())
	}
	out := r.stdout.String()
	if m := missing(out, append(demoResources,
		regexp.MustCompile(`\] demo: the management server changes the health of 127\.0\.0\.1:\d+ in "eds-svc" to UNHEALTHY \(version 2\)\n`),
		regexp.MustCompile(`\n        127\.0\.0\.1:\d+ weight=1 health=UNHEALTHY\n`),
		regexp.MustCompile(`\nxdsctl demo: stopped after \d+ updates\.\n$`),
	)...); len(m) > 0 {
		t.Errorf("demo output lacks %q; it is:\n%s", m, out)
	}
	if s := r.stderr.String(); s != "" {
		t.Errorf("stderr = %q, want nothing", s)
	}
}

// TestDemo_Interrupted checks that a demo without --duration shows
// updates flowing (a configuration of a later version) and exits 0 when
// interrupted.
func TestDemo_Interrupted(t *testing.T) {
	ctx := testContext(t)
	r := startRun(t, "demo", "--base-port", "0", "--interval", "50ms")
	// The server may coalesce quick updates, so any later version will do.
	laterEndpoints := regexp.MustCompile(`\n    ClusterLoadAssignment eds-svc \(version ([2-9]|[1-9][0-9]+)\)`)
	waitForOutput(ctx, t, &r.stdout, "the mesh and an update", func(s string) bool {
		return len(missing(s, append(demoResources, laterEndpoints)...)) == 0
	})
	if code := r.stop(t); code != exitOK {
		t.Fatalf("demo = %d after interruption, want 0; stderr: %s", code, r.stderr.String())
	}
}

// TestDemo_Delta checks that demo --delta shows the same mesh, and its
// updates, over incremental xDS. Versions are then per resource (the
// testutil server's hashes), so only the shapes are checked.
func TestDemo_Delta(t *testing.T) {
	r := startRun(t, "demo", "--base-port", "0", "--delta", "--duration", "1s", "--interval", "100ms")
	if code := r.wait(t); code != exitOK {
		t.Fatalf("demo --delta = %d, want 0; stderr: %s", code, r.stderr.String())
	}
	out := r.stdout.String()
	if m := missing(out,
		regexp.MustCompile(`\] Listener svc \(version \w+\): routes via RouteConfiguration "route-svc"\n`),
		regexp.MustCompile(`\n  Cluster cluster-svc \(version \w+\): EDS, EDS service name "eds-svc",`),
		regexp.MustCompile(`\n    ClusterLoadAssignment eds-svc \(version \w+\): 3 endpoints in 2 localities\n`),
		regexp.MustCompile(`\n        127\.0\.0\.1:\d+ weight=1 health=UNHEALTHY\n`),
	); len(m) > 0 {
		t.Errorf("demo --delta output lacks %q; it is:\n%s", m, out)
	}
}
