#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Follows the README's "In your own module" in a scratch module outside the
# repository: writes its main.go (the section's ```go block), runs its
# ```sh lines with ../xds standing for this checkout, and builds the
# program. So the way the README tells users to add the library and the
# nested module otelxds keeps working. Modules come from the module cache,
# or the module proxy like the rest of CI.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

# section prints the README section headed "## $1".
section() {
	awk -v title="## $1" '
		$0 == title { on = 1; next }
		on && /^## / { exit }
		on { print }
	' "$root/README.md"
}

# block prints the first ```$1 block of stdin.
block() {
	awk -v fence="\`\`\`$1" '
		!on && $0 == fence { on = 1; next }
		on && $0 == "```" { exit }
		on { print }
	'
}

text="$(section "In your own module")"
code="$(block go <<<"$text")"
commands="$(block sh <<<"$text")"
if [[ -z "$code" || -z "$commands" ]]; then
	echo "README.md: the section \"In your own module\" lacks its sh or go block" >&2
	exit 1
fi

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/app"
cd "$dir/app"
printf '%s\n' "$code" >main.go
# The README's ../xds is this checkout. -mod=readonly (CI's GOFLAGS) would
# stop go mod tidy from writing go.mod.
commands="${commands//..\/xds/$root}"
GOFLAGS= bash -euo pipefail -c "$commands"
GOFLAGS= go vet ./...
GOFLAGS= go build -o /dev/null .
echo "scripts/readme-module.sh: the README's module setup builds ($(grep -c '^replace' go.mod) replace lines)"
