package cmdstream

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// A read that fails inside a line cut the line short: that is a cut
// stream (which a caller may follow again), as it is for a line longer
// than the buffer, not a malformed frame (which no one can mend). A line
// that ends early at a clean end of the body stays malformed.
func TestDecoderLineCutByReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset by peer")
	for name, tail := range map[string]string{
		"Short":    `{"data":"abc`,
		"InKey":    `{"stream":"std`,
		"Long":     `{"stream":"stdout","data":"` + strings.Repeat("x", 2*maxBuffer),
		"AfterKey": `{"data":"x","stream":"stdout"`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := io.MultiReader(strings.NewReader(`{"data":"a\n","stream":"stdout"}`+"\n"+tail), errReader{boom})
			d := NewDecoder(body, nil, "s", "c")
			defer d.Close()
			k, data, _, err := d.NextParts()
			require.NoError(t, err)
			assert.Equal(t, KindStdout, k)
			assert.Equal(t, "a\n", string(data))
			for err == nil {
				_, _, _, err = d.NextParts()
			}
			var se *apierr.StreamError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "stream_ended_early", se.Code, "a cut, not %v", err)
			assert.ErrorIs(t, err, boom)
		})
	}

	d := NewDecoder(strings.NewReader(`{"data":"abc`), nil, "s", "c")
	defer d.Close()
	_, _, _, err := d.NextParts()
	var se *apierr.StreamError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "malformed_frame", se.Code, "at a clean end, a broken line is the server's")
}
