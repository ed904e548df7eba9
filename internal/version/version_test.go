package version

import (
	"os"
	"regexp"
	"testing"
)

// TestChangelogNamesThisVersion fails when the newest released version in
// CHANGELOG.md is not Version: a release changes both together.
func TestChangelogNamesThisVersion(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`CHANGELOG.md has no released version (a heading "## [X.Y.Z] - YYYY-MM-DD")`)
	}
	if got := string(m[1]); got != Version {
		t.Fatalf("the newest version in CHANGELOG.md is %s, but Version is %s: change both in the release commit", got, Version)
	}
}
