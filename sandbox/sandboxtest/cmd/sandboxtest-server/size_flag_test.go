package main

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/internal/cli"
)

func TestByteSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"1": 1, "1048576": 1 << 20, "64KiB": 64 << 10, "256MiB": 256 << 20, "2GiB": 2 << 30} {
		var b byteSize
		if assert.NoError(t, b.Set(in), in) {
			assert.Equal(t, want, int64(b), in)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5MiB", "1MB", "MiB", "9999999999GiB"} {
		var b byteSize
		assert.Error(t, b.Set(in), in)
	}
}

func TestRunRejectsBadOutputBudget(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"--output-budget", "lots"}, io.Discard, io.Discard)
	assert.ErrorIs(t, err, cli.ErrUsage)
}
