// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"fmt"
	"strings"
	"time"
)

// Status is the outcome of one check on one variant.
type Status string

// The outcomes.
const (
	// Pass: the server followed the rule in everything the check saw.
	Pass Status = "pass"
	// Fail: the server broke the rule; Result.Detail says how.
	Fail Status = "fail"
	// Skip: the check does not apply (a variant the server does not
	// offer, no Change callback, too few resources) or could not be set
	// up because the server broke another rule; Result.Detail says why.
	Skip Status = "skip"
)

// Result is the outcome of one check on one variant.
type Result struct {
	Check   string  // the check's name, as in Catalog
	Variant Variant // the variant it ran on
	Status  Status
	Rule    string // the rule it checks, a docs/protocol.md ID ("R-28.2")
	Source  string // where the rule comes from: the xDS protocol text section
	Detail  string // what was seen: the violation, the reason for a skip, or what passed
}

// Report is the outcome of a run of the kit.
type Report struct {
	// Results are in Catalog order, and by variant (the order of
	// Variants) within a check.
	Results []Result

	// Resources are the names the checks worked with, by type URL, each
	// sorted: the ones given in Config and the ones discovered.
	Resources map[string][]string

	// Notes are what the kit noticed while it looked for resources: a
	// request not answered, a name given in Config that the server does
	// not have.
	Notes []string

	// Duration is how long the run took.
	Duration time.Duration
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool {
	for _, res := range r.Results {
		if res.Status == Fail {
			return true
		}
	}
	return false
}

// Counts returns the number of results of each status.
func (r *Report) Counts() map[Status]int {
	n := map[Status]int{Pass: 0, Fail: 0, Skip: 0}
	for _, res := range r.Results {
		n[res.Status]++
	}
	return n
}

// String renders the report as a table for people: one line per result,
// then a summary line.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-30s %-15s %-6s %-8s %s\n", "CHECK", "VARIANT", "RESULT", "RULE", "DETAIL")
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-30s %-15s %-6s %-8s %s\n", res.Check, res.Variant, res.Status, res.Rule, res.Detail)
	}
	n := r.Counts()
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped in %v\n", n[Pass], n[Fail], n[Skip], r.Duration.Round(time.Millisecond))
	return b.String()
}

// CheckInfo describes one check of the kit.
type CheckInfo struct {
	Name     string    // snake_case, stable
	Summary  string    // what the check does, one sentence
	Rule     string    // the docs/protocol.md rule it checks ("R-28.2")
	Source   string    // the xDS protocol text section the rule comes from
	Variants []Variant // the variants it applies to
	// NeedsChange: the check runs only with Config.Change.
	NeedsChange bool
}

// Catalog returns every check, most valuable first: the order of reports.
// The slice is new; the caller may modify it.
func Catalog() []CheckInfo {
	out := make([]CheckInfo, len(checks))
	for i, c := range checks {
		out[i] = c.CheckInfo
		out[i].Variants = append([]Variant(nil), c.Variants...)
	}
	return out
}

// lookup returns the check named name, or nil.
func lookup(name string) *check {
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	return nil
}
