package bodypipe

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReadsWhatIsWritten(t *testing.T) {
	t.Parallel()
	rc := New(t.Context(), func(_ context.Context, w io.Writer) error {
		_, err := io.Copy(w, strings.NewReader("hello"))
		return err
	})
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
}

func TestWriteErrorEndsTheStream(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	rc := New(t.Context(), func(_ context.Context, w io.Writer) error {
		_, _ = w.Write([]byte("part"))
		return boom
	})
	defer rc.Close()
	b, err := io.ReadAll(rc)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, "part", string(b))
}

func TestUnreadBodyStartsNothing(t *testing.T) {
	t.Parallel()
	rc := New(t.Context(), func(context.Context, io.Writer) error {
		t.Error("write ran for a body that was never read")
		return nil
	})
	require.NoError(t, rc.Close())
	_, err := rc.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
}

func TestCancelUnblocksAWriterNobodyReads(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	rc := New(ctx, func(_ context.Context, w io.Writer) error {
		for {
			if _, err := w.Write(make([]byte, 1<<10)); err != nil {
				return err
			}
		}
	})
	_, err := rc.Read(make([]byte, 1))
	require.NoError(t, err)
	cancel()
	_, err = io.ReadAll(rc)
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, rc.Close(), "Close waits for the writer to stop")
}
