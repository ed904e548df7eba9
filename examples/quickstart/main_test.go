package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestQuickstartLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, &out, &errOut, true), out.String())
	s := out.String()
	assert.Contains(t, errOut.String(), "embedded local server")
	assert.Contains(t, errOut.String(), "without isolation")
	assert.Contains(t, s, "| hello 3 from")
	assert.Contains(t, s, "stdout | 1\n")
	assert.Contains(t, s, `data/sorted.txt = "1\n2\n3\n"`)
	assert.Contains(t, s, "is stopped")
}
