//go:build !unix

package tarx

// oNonblock is not needed where FIFOs do not block an open.
const oNonblock = 0
