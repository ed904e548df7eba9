package redact_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// A name is secret when one of its words says so, whatever its case and
// separators; a word that merely contains a secret word does not count.
func TestIsSecretNameByWord(t *testing.T) {
	t.Parallel()
	secret := []string{
		// Short words, whole words only.
		"GH_PAT", "GITHUB_PAT", "pat", "DB_PASS", "PASS", "dbPass", "SENTRY_DSN", "dsn",
		"X-Auth", "GH_AUTH", "auth", "PRIVATE", "PRIVATE_KEY", "AWS_CREDS",
		// KEY and PWD need another word: "key" alone names the key of a
		// key-value pair, PWD alone the working directory.
		"API_KEY", "apiKey", "APIKey", "X-Api-Key", "SSH_KEY", "STRIPE_KEY", "MASTER_KEY",
		"SECRET_KEY_BASE", "accessKeyId", "MYSQL_PWD", "DB_PWD",
		// Long words, also glued to a word before them.
		"TOKEN", "GITHUB_TOKEN", "OAUTH2_TOKEN", "token2", "x-vercel-oidc-token", "accessToken",
		"accesstoken", "AUTHTOKEN", "refresh_token", "_authToken",
		"SECRET", "client_secret", "CLIENTSECRET", "secrets", "secretPresent",
		"password", "DB_PASSWORD", "dbpassword", "PASSWORDS", "DB_PASSWD", "passphrase", "GPG_PASSPHRASE",
		"credential", "DB_CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS",
		"Cookie", "Set-Cookie", "SESSION_COOKIE", "cookies",
		"Authorization", "Proxy-Authorization", "apikey", "X-APIKEY", "privatekey",
		// Two words that are one name.
		"DB_CONNECTION_STRING", "ConnectionString", "connectionstring", "AZURE_STORAGE_CONNECTION_STRING",
		"AWS_SESSION_TOKEN", "AWS_SECRET_ACCESS_KEY",
	}
	for _, name := range secret {
		assert.True(t, redact.IsSecretName(name), "%s is secret", name)
	}
	harmless := []string{
		"", "PATH", "HOME", "PWD", "OLDPWD", "USER", "username", "SHELL", "TERM", "LANG",
		"KEYBOARD", "KEYMAP", "keychain", "MONKEY", "key", "keys",
		"PASSING", "BYPASS", "COMPASS", "PATTERN", "PATCH", "SPATH",
		"AUTHOR", "GIT_AUTHOR_NAME", "OAUTH_CLIENT_ID", "authority",
		"TOKENIZERS_PARALLELISM", "tokenizer", "MAX_TOKENS", "inputTokens", "outputTokens",
		"SECRETARY", "CERT", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
		"SESSION", "sessionId", "SESSION_ID", "currentSessionId",
		"PRIVATEER", "DSNX", "CONNECTION", "STRING",
		"Content-Type", "teamId", "projectId", "X-Vercel-Id", "name", "cmd", "env", "headers",
		"credStorage", "cookiecutter", "tokens",
	}
	for _, name := range harmless {
		assert.False(t, redact.IsSecretName(name), "%s is not secret", name)
	}
}

// IsSecretName runs for every header of every request a fake records.
func TestIsSecretNameDoesNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	allocs := testing.AllocsPerRun(100, func() {
		_ = redact.IsSecretName("AZURE_STORAGE_CONNECTION_STRING")
		_ = redact.IsSecretName("X-Vercel-Oidc-Token")
	})
	assert.Zero(t, allocs)
}
