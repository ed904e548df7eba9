package sandbox

import "os"

// EnvBaseURL is the environment variable that sets the API base URL of a
// client made without WithBaseURL, so that a program reaches a local
// server (sandboxtest-server, say) without a flag of its own:
//
//	VERCEL_SANDBOX_BASE_URL=http://127.0.0.1:4000
//
// It obeys the rule of WithBaseURL (https, or plain http to a loopback
// address), and errors about it name the variable. Unset or empty, the
// base URL is DefaultBaseURL. The official SDK and CLI read no such
// variable.
const EnvBaseURL = "VERCEL_SANDBOX_BASE_URL"

// resolveBaseURL returns the base URL of c, from WithBaseURL, else EnvBaseURL,
// else DefaultBaseURL, and the name its errors give it.
func (c *config) resolveBaseURL() (u, field string) {
	if c.baseURLSet {
		return c.baseURL, "BaseURL"
	}
	if u := os.Getenv(EnvBaseURL); u != "" {
		return u, EnvBaseURL
	}
	return DefaultBaseURL, "BaseURL"
}
