// Package readme holds the tests that keep README.md true: its tour is
// extracted, built and run against the embedded local backend, and its
// count of the client packages' exported names is computed from the code.
package readme
