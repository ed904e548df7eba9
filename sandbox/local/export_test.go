package local

// WithWatchedDiskQuota makes the server watch its disk quota where it
// could hold it, as it does where it cannot.
func WithWatchedDiskQuota() Option { return func(c *config) { c.watchDisk = true } }
