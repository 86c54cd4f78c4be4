// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// childTestEnv names the variable that marks a child process run by
// inChildWithGRPCEnv, holding the name of the test it runs.
const childTestEnv = "PROXYLESS_INTEROP_CHILD_TEST"

// inChildWithGRPCEnv runs the top-level test t again in a child process
// of the test binary, with env ("NAME=value") added to its environment,
// and reports whether the caller is that child. grpc-go reads its
// GRPC_EXPERIMENTAL_* variables once, when its packages initialise, so a
// feature it keeps behind one (SNI, HTTP CONNECT, authority rewriting)
// can be compared only in a process started with it. In the parent, it
// fails t if the child fails, logs the child's output, and returns false:
// the parent then returns.
func inChildWithGRPCEnv(t *testing.T, env ...string) bool {
	t.Helper()
	if os.Getenv(childTestEnv) == t.Name() {
		for _, kv := range env {
			name, value, _ := strings.Cut(kv, "=")
			if os.Getenv(name) != value {
				t.Fatalf("child process without %s", kv)
			}
		}
		return true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatal("inChildWithGRPCEnv runs top-level tests only")
	}
	args := []string{"-test.run", "^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), env...), childTestEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("child process with %s:\n%s", strings.Join(env, " "), out)
	if err != nil {
		t.Fatalf("child process: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child process did not run %s", t.Name())
	}
	return false
}
