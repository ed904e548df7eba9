package redact_test

import (
	"fmt"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

func Example() {
	s := redact.NewSet("hunter2-secret")
	fmt.Println(s.String("login with hunter2-secret at https://bob:pw@example.com/"))
	fmt.Println(redact.IsSecretName("X-Api-Key"), redact.IsSecretName("Content-Type"))
	fmt.Println(redact.HeaderValue("Authorization", "Bearer abc"))
	// Output:
	// login with [REDACTED] at https://bob:[REDACTED]@example.com/
	// true false
	// Bearer [REDACTED]
}
