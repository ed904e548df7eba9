// Package workload composes the sandbox client into the building blocks that
// real workloads need: stable error codes
// that are safe to show to end users, observation of each phase, a runner
// that always stops its sandbox, a code-execution tool with validated input,
// and task control (stop from another process, cancellation, inactivity and
// deadlines, reuse or recreate).
//
// Every error this package returns for a failed workload is a *Error with a
// stable Code. Match it with errors.Is against the sentinels (ErrTimeout,
// ErrCreationFailed, ...) or with errors.As to read the code and the
// user-facing message; the underlying cause stays reachable through Unwrap.
package workload
