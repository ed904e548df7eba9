package local

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drain returns every retained frame of a closed log.
func drain(t *testing.T, o *outputLog) []outFrame {
	t.Helper()
	frames, _, done, err := o.next(context.Background(), nil, 0)
	require.NoError(t, err)
	if done {
		return nil
	}
	return frames
}

func TestOutputLogFollowerWakesWithoutPolling(t *testing.T) {
	t.Parallel()
	o := newOutputLog(0)
	got := make(chan []outFrame, 1)
	go func() {
		frames, _, _, _ := o.next(context.Background(), nil, 0)
		got <- frames
	}()
	_, err := o.writer(streamStderr).Write([]byte("late"))
	require.NoError(t, err)
	assert.Equal(t, []outFrame{{streamStderr, "late"}}, <-got)
	o.close()
	_, err = o.writer(streamStdout).Write([]byte("after"))
	assert.Error(t, err, "writes after the end are refused")
	_, _, done, err := o.next(context.Background(), nil, 1)
	require.NoError(t, err)
	assert.True(t, done)
}

func TestOutputLogKeepsStreamsApart(t *testing.T) {
	t.Parallel()
	o := newOutputLog(0)
	_ = o.append(streamStdout, []byte{0xe2, 0x82})
	_ = o.append(streamStderr, []byte("err"))
	_ = o.append(streamStdout, []byte{0xac})
	o.close()
	assert.Equal(t, []outFrame{{streamStderr, "err"}, {streamStdout, "€"}}, drain(t, o))
	assert.Equal(t, "€", o.text(streamStdout))
}

// Whatever the split into writes, the frames are valid UTF-8 and add up to
// the whole output decoded at once.
func FuzzOutputLogUTF8(f *testing.F) {
	f.Add([]byte("h\xe2\x82\xacllo"), uint8(3))
	f.Add([]byte("\xf0\x9f\x98\x80\xff\xe2"), uint8(1))
	f.Add([]byte("\xed\xa0\x80 surrogate"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		n := int(step%7) + 1
		o := newOutputLog(0)
		for i := 0; i < len(data); i += n {
			require.NoError(t, o.append(streamStdout, data[i:min(i+n, len(data))]))
		}
		o.close()
		var b strings.Builder
		for _, fr := range drain(t, o) {
			require.True(t, utf8.ValidString(fr.data))
			require.NotEmpty(t, fr.data)
			b.WriteString(fr.data)
		}
		require.Equal(t, validUTF8(data), b.String())
	})
}

func TestOutputLogBatchesAndDrops(t *testing.T) {
	t.Parallel()
	o := newOutputLog(0)
	for range maxBatch + 10 {
		_ = o.append(streamStdout, []byte("ab"))
	}
	o.close()
	frames, next, done, err := o.next(context.Background(), nil, 0)
	require.NoError(t, err)
	assert.False(t, done)
	assert.Len(t, frames, maxBatch)
	frames, _, _, err = o.next(context.Background(), nil, next)
	require.NoError(t, err)
	assert.Len(t, frames, 10)

	// Frames beyond the limit were dropped, oldest first: a reader that
	// starts at 0 is told, and one that starts at the oldest retained frame
	// reads on.
	small := newOutputLog(frameCost(3))
	for _, s := range []string{"1", "22", "333"} {
		_ = small.append(streamStdout, []byte(s))
	}
	small.close()
	_, _, _, err = small.next(context.Background(), nil, 0)
	var ev *evictedError
	require.ErrorAs(t, err, &ev)
	assert.Equal(t, int64(2), ev.frames)
	frames, _, _, err = small.next(context.Background(), nil, 2)
	require.NoError(t, err)
	assert.Equal(t, []outFrame{{streamStdout, "333"}}, frames)
	total, frames2, bytes := small.stats()
	assert.Equal(t, int64(6), total)
	assert.Equal(t, int64(2), frames2)
	assert.Equal(t, int64(3), bytes)
}

func TestOutputLogNextStops(t *testing.T) {
	t.Parallel()
	o := newOutputLog(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _, err := o.next(ctx, nil, 0)
	assert.ErrorIs(t, err, context.Canceled)
	stop := make(chan struct{})
	close(stop)
	_, _, _, err = o.next(context.Background(), stop, 0)
	assert.Error(t, err)
}

// The server-wide budget evicts the oldest command's output first, whole
// frames at a time, and forgets a finished command once it holds nothing.
func TestOutputStoreEvictsOldestCommandFirst(t *testing.T) {
	t.Parallel()
	st := newOutputStore(4 * frameCost(10))
	older, newer := st.newLog(0), st.newLog(0)
	for range 3 {
		_ = older.append(streamStdout, []byte("0123456789"))
	}
	older.close()
	_ = newer.append(streamStdout, []byte("abcdefghij"))
	assert.Equal(t, 4*frameCost(10), st.used.Load(), "at the budget: nothing evicted yet")

	_ = newer.append(streamStdout, []byte("klmnopqrst"))
	assert.Equal(t, 4*frameCost(10), st.used.Load())
	assert.Equal(t, frameCost(10), st.evicted.Load())
	_, _, _, err := older.next(context.Background(), nil, 0)
	assert.ErrorAs(t, err, new(*evictedError), "the older command lost its first frame")
	frames, _, _, err := newer.next(context.Background(), nil, 0)
	require.NoError(t, err)
	assert.Len(t, frames, 2, "the newer command keeps all of its output")

	for range 2 {
		_ = newer.append(streamStdout, []byte("uvwxyz0123"))
	}
	assert.Equal(t, 1, st.logs.Len(), "the older command, finished and empty, is forgotten")
	assert.Equal(t, 4*frameCost(10), st.used.Load())
}

// Output released with its session stays readable by a stream that was
// reading it, and is dropped when that stream ends; a new stream is told.
func TestOutputStoreReleaseWaitsForFollowers(t *testing.T) {
	t.Parallel()
	st := newOutputStore(0)
	o := st.newLog(0)
	_ = o.append(streamStdout, []byte("kept"))
	o.close()
	require.Nil(t, o.follow())
	st.release(o)
	assert.Equal(t, []outFrame{{streamStdout, "kept"}}, drain(t, o))
	assert.Equal(t, frameCost(4), st.used.Load(), "still held for the stream in flight")
	o.unfollow()
	assert.Zero(t, st.used.Load())
	assert.Equal(t, frameCost(4), st.released.Load())
	ev := o.follow()
	require.NotNil(t, ev)
	assert.True(t, ev.released)
	assert.Contains(t, ev.line().Data.Message, "released when its session stopped")

	// A command that printed nothing has nothing to miss.
	empty := st.newLog(0)
	empty.close()
	st.release(empty)
	assert.Nil(t, empty.follow())
	empty.unfollow()
}
