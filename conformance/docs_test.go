// SPDX-License-Identifier: Apache-2.0

package conformance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyless/xds/conformance"
)

// TestDocs_ListEveryCheck checks that docs/conformance.md, "The checks",
// has a row for every check of the kit, in Catalog order, with its rule,
// and that each check's source names a section the rule in
// docs/protocol.md cites too.
func TestDocs_ListEveryCheck(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## The checks\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, strings.Split(strings.Trim(line, "| "), " | "))
		}
	}
	catalog := conformance.Catalog()
	if len(rows) != len(catalog) {
		t.Fatalf("docs/conformance.md lists %d checks, the kit has %d", len(rows), len(catalog))
	}
	protocol, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range catalog {
		if name, rule := strings.Trim(rows[i][0], "`"), rows[i][2]; name != c.Name || rule != c.Rule {
			t.Errorf("row %d: %s %s, want %s %s", i+1, name, rule, c.Name, c.Rule)
		}
		_, rule, _ := strings.Cut(string(protocol), "**"+c.Rule+"**")
		rule, _, _ = strings.Cut(rule, "\n- **")
		if parts := strings.Split(c.Source, `"`); len(parts) > 1 {
			if sec := parts[1]; !strings.Contains(strings.Join(strings.Fields(rule), " "), sec) {
				t.Errorf("%s: source section %q is not cited by %s in docs/protocol.md", c.Name, sec, c.Rule)
			}
		}
	}
}
