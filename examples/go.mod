module github.com/sbx-go/vercel-sandbox/examples

go 1.25.0

require (
	github.com/creack/pty v1.1.24
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/sbx-go/vercel-sandbox v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.47.0
	golang.org/x/term v0.45.0
)

require (
	github.com/coder/websocket v1.8.14 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.20.0 // indirect
)

replace github.com/sbx-go/vercel-sandbox => ../
