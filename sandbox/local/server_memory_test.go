package local_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// TestOutputBudgetOverManyCommands runs 10,000 commands of 100 KiB of
// output each (1,000 under the race detector), about 1 GB in all, through
// the API of a server with a 4 MiB output budget. The output kept stays
// within the budget after every command, the oldest output goes first, a
// replay of it says so, and the heap does not grow with the output. It is
// not parallel: parallel tests wait until it ends, so they do not disturb
// the heap it measures.
func TestOutputBudgetOverManyCommands(t *testing.T) {
	const (
		budget = 4 << 20
		writes = 25
		size   = 4 << 10 // 25 writes of 4 KiB: 100 KiB per command
		cost   = size + 64
	)
	commands := 10_000
	if raceEnabled {
		commands = 1_000
	}
	h := newHarness(t, local.WithOutputBudget(budget))
	sid := h.create(nil).Session.ID
	base := heapInuse()

	var ids []string
	for i := range commands {
		ids = append(ids, h.runWait(sid, "chunks", "25", "4096"))
		if m := h.srv.Memory(); m.OutputBytes > budget {
			t.Fatalf("after %d commands the server keeps %d bytes of output, over its budget of %d", i+1, m.OutputBytes, budget)
		}
	}
	growth := heapInuse() - base

	m := h.srv.Memory()
	assert.Equal(t, commands, m.Commands)
	assert.Equal(t, int64(commands)*writes*cost, m.OutputBytes+m.EvictedBytes, "every byte is either kept or counted as evicted")
	assert.Greater(t, m.OutputBytes, int64(budget-2*writes*cost), "the budget is used, not emptied")
	assert.Equal(t, []logFrame{{"error", "output_evicted"}}, h.logs(sid, ids[0]), "the oldest output went first, and its replay says so")
	last := h.logs(sid, ids[len(ids)-1])
	require.Len(t, last, writes, "the newest output is whole")
	assert.Equal(t, logFrame{"stdout", strings.Repeat("x", size)}, last[0])
	// Besides the budget, each command leaves records for inspection (the
	// command, its request in the request log: about 1.7 KiB); 100 KiB of
	// output per command must not be there.
	assert.Less(t, growth, int64(budget+commands*4<<10+16<<20), "heap growth after %d commands", commands)
	t.Logf("%d commands, %d MiB of output: heap grew by %.1f MiB; %+v", commands, int64(commands)*writes*size>>20, float64(growth)/(1<<20), m)

	// Stopping the session releases what is left.
	h.ok("POST", sessPath(sid, "/stop"), nil, nil)
	m = h.srv.Memory()
	assert.Zero(t, m.OutputBytes)
	assert.Zero(t, m.OutputCommands)
	assert.Equal(t, int64(commands)*writes*cost, m.EvictedBytes+m.ReleasedBytes)
}

// runWait runs a command attached without its output and returns its id
// once it has finished.
func (h *harness) runWait(sid, name string, args ...string) string {
	h.t.Helper()
	status, body := h.call("POST", sessPath(sid, "/cmd"),
		map[string]any{"command": name, "args": args, "env": map[string]string{}, "sudo": false, "wait": true})
	require.Equal(h.t, 200, status, "%s", body)
	first, _, _ := bytes.Cut(body, []byte("\n"))
	var r struct {
		Command struct{ ID string } `json:"command"`
	}
	require.NoError(h.t, json.Unmarshal(first, &r))
	return r.Command.ID
}

// heapInuse is the heap in use after a collection.
func heapInuse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// TestRequestHistoryBounded checks that the request log keeps the most
// recent requests only, in arrival order, and counts those it dropped.
func TestRequestHistoryBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, local.WithRequestHistory(5))
	for i := range 12 {
		h.call("GET", "/v2/sandboxes/sessions/sess_"+string(rune('a'+i)), nil)
	}
	reqs := h.srv.Requests()
	require.Len(t, reqs, 5)
	for i, r := range reqs {
		assert.Equal(t, "/v2/sandboxes/sessions/sess_"+string(rune('a'+7+i)), r.Path)
	}
	m := h.srv.Memory()
	assert.Equal(t, 5, m.Requests)
	assert.Equal(t, int64(7), m.DroppedRequests)

	_, err := local.New(local.WithRequestHistory(0))
	assert.ErrorContains(t, err, "WithRequestHistory")
}
