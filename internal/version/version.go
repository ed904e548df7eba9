// Package version holds the one version string of this module.
//
// The newest released version in CHANGELOG.md must equal Version (a test
// checks it): a release changes both in one commit, and that commit gets
// the tag "v" + Version.
package version

// Version is the version of this module, without the leading "v". It is
// sent in the User-Agent of every request and exported as sandbox.Version.
const Version = "0.2.0"
