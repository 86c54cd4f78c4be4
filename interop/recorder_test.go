// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"strings"
)

// eventKind says which Watcher method produced a watchEvent.
type eventKind int

const (
	changed eventKind = iota + 1
	resourceError
	ambientError
)

func (k eventKind) String() string {
	switch k {
	case changed:
		return "ResourceChanged"
	case resourceError:
		return "ResourceError"
	case ambientError:
		return "AmbientError"
	default:
		return fmt.Sprintf("eventKind(%d)", int(k))
	}
}

// watchEvent is one call of a Watcher method.
type watchEvent[T any] struct {
	kind  eventKind
	value T     // for changed
	err   error // for resourceError and ambientError
}

func (e watchEvent[T]) String() string {
	if e.kind == changed {
		return fmt.Sprintf("%v(%+v)", e.kind, e.value)
	}
	return fmt.Sprintf("%v(%v)", e.kind, e.err)
}

// recordingWatcher is a watcher.Watcher[T] that records every call and
// calls done at once, so it never holds up the client's flow control.
type recordingWatcher[T any] struct {
	events *eventLog[watchEvent[T]]
}

func newRecordingWatcher[T any]() *recordingWatcher[T] {
	return &recordingWatcher[T]{events: newEventLog[watchEvent[T]]()}
}

func (w *recordingWatcher[T]) ResourceChanged(v T, done func()) {
	w.events.add(watchEvent[T]{kind: changed, value: v})
	done()
}

func (w *recordingWatcher[T]) ResourceError(err error, done func()) {
	w.events.add(watchEvent[T]{kind: resourceError, err: err})
	done()
}

func (w *recordingWatcher[T]) AmbientError(err error, done func()) {
	w.events.add(watchEvent[T]{kind: ambientError, err: err})
	done()
}

// next waits for the first event at index from or later, and returns it
// with its index.
func (w *recordingWatcher[T]) next(ctx context.Context, from int) (watchEvent[T], int, error) {
	return w.waitFor(ctx, from, func(watchEvent[T]) bool { return true })
}

// waitFor waits for the first event at index from or later that match
// accepts, and returns it with its index. Its error lists the events seen.
func (w *recordingWatcher[T]) waitFor(ctx context.Context, from int, match func(watchEvent[T]) bool) (watchEvent[T], int, error) {
	e, i, err := w.events.waitFor(ctx, from, match)
	if err != nil {
		return e, i, fmt.Errorf("%w; events seen: %s", err, w)
	}
	return e, i, nil
}

// String lists the events so far, for failure messages.
func (w *recordingWatcher[T]) String() string {
	var b strings.Builder
	b.WriteString("[")
	for i, e := range w.events.all() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.String())
	}
	b.WriteString("]")
	return b.String()
}
