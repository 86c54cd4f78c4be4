#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# House rules that go vet does not check (docs/style.md "House rules enforced by
# a script", after grpc-go's scripts/vet.sh). Cheap and greppable; run from
# the repository root. Exits non-zero, listing every violation, if any rule
# fails.
set -u
cd "$(dirname "$0")/.."

fail=0
report() { # report RULE LINES...
	if [ -n "$2" ]; then
		printf '%s:\n%s\n\n' "$1" "$2"
		fail=1
	fi
}

# Tracked and untracked-but-not-ignored files that exist in the work tree
# (a file deleted but not yet committed is listed by git, and skipped).
gofiles=$(git ls-files --cached --others --exclude-standard -- '*.go' 2>/dev/null | grep -v '/testdata/' |
	while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done)
# Library code: everything but tests, commands, examples and the interop module.
libfiles=$(printf '%s\n' $gofiles | grep -v '_test\.go$' | grep -v -E '^(cmd|examples|interop)/' || true)

report "gofmt: not formatted (run gofmt -w)" "$(gofmt -l $gofiles)"

report "SPDX header missing (first line must be // SPDX-License-Identifier: Apache-2.0)" \
	"$(for f in $gofiles; do head -1 "$f" | grep -q '^// SPDX-License-Identifier: Apache-2.0$' || echo "$f"; done)"

report "time.After in non-test code leaks a timer until it fires; use time.NewTimer and Stop" \
	"$(printf '%s\n' $gofiles | grep -v '_test\.go$' | xargs grep -n 'time\.After(' 2>/dev/null || true)"

report "interface{}: use any" "$(printf '%s\n' $gofiles | xargs grep -n 'interface{}' 2>/dev/null || true)"

report "func init() in library code: no init side effects" \
	"$(printf '%s\n' $libfiles | xargs grep -n '^func init()' 2>/dev/null || true)"

# Every non-test file outside testutil/ and the interop module: the library,
# cmd/ (xdsctl demo serves with package mgmtserver) and the examples.
report "non-test code imports testutil (testutil is for tests; programs use mgmtserver)" \
	"$(printf '%s\n' $gofiles | grep -v '_test\.go$' | grep -v -E '^(testutil|interop)/' |
		xargs grep -n '"github.com/proxyless/xds/testutil' 2>/dev/null || true)"

report "envoy proto import without a v3…pb / v3…grpc alias" \
	"$(printf '%s\n' $gofiles | xargs grep -n -E '^\s*"github\.com/envoyproxy/go-control-plane/envoy/' 2>/dev/null || true)"

report "fmt.Errorf wrapping an error with %v: use %w" \
	"$(printf '%s\n' $libfiles | xargs grep -n -E 'fmt\.Errorf\(.*%v.*, err\)' 2>/dev/null || true)"

# Public packages: the directories of non-test library files outside
# internal/ (at any depth, as Go's rule) and testutil/ (so the library's
# packages and otelxds).
report "public package without a doc.go (docs/style.md, Documentation)" \
	"$(printf '%s\n' $libfiles | grep -v -E '(^|/)internal/|^testutil/' | xargs -r -n1 dirname | sort -u |
		while read -r d; do [ -f "$d/doc.go" ] || echo "$d"; done)"

# staticcheck (honnef.co/go/tools), pinned as grpc-go pins it, fetched by
# go run rather than required by the module. Deprecated Envoy fields that
# gRPC's rules still read carry a //lint:ignore SA1019 with the reason.
staticcheck_version=v0.8.2
if ! sc=$(go run "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version" ./... 2>&1); then
	report "staticcheck $staticcheck_version" "$sc"
fi

./scripts/checkdocs.sh || fail=1 # docs/style.md: no outside references, links resolve, rule IDs defined
exit $fail
