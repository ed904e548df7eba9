package local

import (
	"container/list"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// The server keeps each command's output for replay, so that the logs
// endpoint can answer from the first byte. Kept forever, that output is the
// one part of the server's memory that grows with use, so it is held within
// two budgets, both counted in frameCost units: one per command
// (WithOutputLimit) and one for the whole server (WithOutputBudget). Going
// over either evicts the oldest output first; a stopped session releases its
// commands' output. A replay that would need evicted output gets an error
// frame (code outputEvicted) instead of a silently shortened log.
//
// Lock order: Server.mu, then outputStore.mu, then outputLog.mu. A log
// never takes the store's lock while it holds its own.

// defaultOutputBudget is how much output the whole server keeps for replay
// unless WithOutputBudget says otherwise.
const defaultOutputBudget = 256 << 20

// frameOverhead is what one frame costs beyond its data: the frame in its
// slice and the header and rounding of its string. Counting it keeps a
// command that writes one byte at a time within the budget too.
const frameOverhead = 64

// frameCost is the memory one frame of n data bytes is counted for.
func frameCost(n int) int64 { return int64(n) + frameOverhead }

// outputEvicted is the code of the error frame that ends a replay of output
// the server no longer holds.
const outputEvicted = "output_evicted"

// outputStore accounts for the output every command of a server retains
// and evicts the oldest when the total goes over the budget.
type outputStore struct {
	budget int64

	used     atomic.Int64 // cost retained by every log
	evicted  atomic.Int64 // cost evicted by either budget
	released atomic.Int64 // cost released with stopped sessions

	mu   sync.Mutex
	logs list.List // *outputLog that may retain output, oldest command first
}

func newOutputStore(budget int64) *outputStore {
	if budget <= 0 {
		budget = defaultOutputBudget
	}
	return &outputStore{budget: budget}
}

// newLog returns the output log of a new command, limited to limit per
// command and charged to the store.
func (st *outputStore) newLog(limit int64) *outputLog {
	o := newOutputLog(limit)
	o.store = st
	st.mu.Lock()
	o.elem = st.logs.PushBack(o)
	st.mu.Unlock()
	return o
}

// charge records cost more retained, and evicts the oldest output while the
// total is over the budget. Called without any log's lock.
func (st *outputStore) charge(cost int64) {
	if st.used.Add(cost) <= st.budget {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for e := st.logs.Front(); e != nil && st.used.Load() > st.budget; {
		next := e.Next()
		o := e.Value.(*outputLog)
		if o.evictFront(st.used.Load() - st.budget) {
			st.logs.Remove(e)
			o.elem = nil
		}
		e = next
	}
}

// uncharge records cost no longer retained: evicted by the per-command
// limit (evicted) or released (!evicted).
func (st *outputStore) uncharge(cost int64, evicted bool) {
	st.used.Add(-cost)
	if evicted {
		st.evicted.Add(cost)
	} else {
		st.released.Add(cost)
	}
}

// release drops the output of o once no stream reads it any more, and
// forgets o. Called with Server.mu held or not at all.
func (st *outputStore) release(o *outputLog) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if o.elem != nil {
		st.logs.Remove(o.elem)
		o.elem = nil
	}
	o.release()
}

// evictedError is the answer to a read of output that is no longer held.
type evictedError struct {
	released bool  // dropped with its session rather than by a budget
	frames   int64 // frames no longer held
}

func (e *evictedError) Error() string {
	if e.released {
		return fmt.Sprintf("local: the output of this command (%d frames) was released when its session stopped", e.frames)
	}
	return fmt.Sprintf("local: the first %d frames of this command's output were evicted to keep the server within its output budget (see local.WithOutputLimit and local.WithOutputBudget)", e.frames)
}

func (e *evictedError) line() errorLine {
	return errorLine{Stream: "error", Data: wire.StreamErrorData{Code: outputEvicted, Message: e.Error()}}
}
