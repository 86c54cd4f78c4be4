// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/watcher"
)

// eventKind names the watcher method of an event.
type eventKind string

const (
	changed       eventKind = "ResourceChanged"
	resourceError eventKind = "ResourceError"
	ambientError  eventKind = "AmbientError"
)

// event is one watcher call, with the type erased: a value is its name and
// tag (kind.tag), an error carries the resource name of its
// *client.ResourceError when it has one.
type event struct {
	kind eventKind
	name string
	tag  string
	err  error
}

// String returns the event, shortened to 300 bytes: an error may quote
// an over-long name (CellHostileNames).
func (e event) String() string {
	var s string
	if e.kind == changed {
		s = fmt.Sprintf("%s(%q, %q)", e.kind, e.name, e.tag)
	} else {
		s = fmt.Sprintf("%s(%v)", e.kind, e.err)
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// recorder is a watcher of any type (through typed) that records its
// calls, calling done first. It buffers 10 000 events; a watcher call
// blocks when they are unread.
type recorder struct {
	desc   string // for failures: what is watched
	events chan event
	last   map[string]string // name → tag of the last value returned by waitFor
}

func newRecorder(format string, args ...any) *recorder {
	return &recorder{desc: fmt.Sprintf(format, args...), events: make(chan event, 10000), last: make(map[string]string)}
}

// typedWatcher adapts a recorder to watcher.Watcher[T].
type typedWatcher[T any] struct {
	r        *recorder
	describe func(T) (name, tag string)
}

func typed[T any](r *recorder, describe func(T) (name, tag string)) watcher.Watcher[T] {
	return typedWatcher[T]{r: r, describe: describe}
}

func (w typedWatcher[T]) ResourceChanged(v T, done func()) {
	done()
	name, tag := w.describe(v)
	w.r.events <- event{kind: changed, name: name, tag: tag}
}

func (w typedWatcher[T]) ResourceError(err error, done func()) {
	done()
	w.r.events <- event{kind: resourceError, name: errName(err), err: err}
}

func (w typedWatcher[T]) AmbientError(err error, done func()) {
	done()
	w.r.events <- event{kind: ambientError, name: errName(err), err: err}
}

func errName(err error) string {
	var re *client.ResourceError
	if errors.As(err, &re) {
		return re.Name
	}
	return ""
}

// waitFor returns the next event that match accepts, failing the test if
// another event comes first or none comes before ctx ends. Events that
// tolerate accepts (tolerate may be nil) may come in between, and so may
// a value equal to the last one waitFor returned for its name (the same
// tag): a redelivery, which changes nothing for the watcher.
func (r *recorder) waitFor(ctx context.Context, t *testing.T, want string, match, tolerate func(event) bool) event {
	t.Helper()
	for {
		select {
		case e := <-r.events:
			if match(e) {
				if e.kind == changed {
					r.last[e.name] = e.tag
				}
				return e
			}
			if tag, ok := r.last[e.name]; ok && e.kind == changed && tag == e.tag {
				continue
			}
			if tolerate != nil && tolerate(e) {
				continue
			}
			t.Fatalf("%s: got %v, want %s", r.desc, e, want)
		case <-ctx.Done():
			t.Fatalf("%s: no %s: %v", r.desc, want, ctx.Err())
		}
	}
}

// wantValue waits for the value of name with tag.
func (r *recorder) wantValue(ctx context.Context, t *testing.T, name, tag string) {
	t.Helper()
	r.waitFor(ctx, t, fmt.Sprintf("%s(%q, %q)", changed, name, tag), func(e event) bool {
		return e.kind == changed && e.name == name && e.tag == tag
	}, nil)
}

// wantLatest waits for the value of name with tag, accepting other
// values of name before it: a new watch may first get a cached value
// that the server has replaced since.
func (r *recorder) wantLatest(ctx context.Context, t *testing.T, name, tag string) {
	t.Helper()
	r.waitFor(ctx, t, fmt.Sprintf("%s(%q, %q)", changed, name, tag), func(e event) bool {
		return e.kind == changed && e.name == name && e.tag == tag
	}, func(e event) bool {
		return e.kind == changed && e.name == name
	})
}

// wantValues waits for the values of every name of want (name → tag), in
// any order.
func (r *recorder) wantValues(ctx context.Context, t *testing.T, want map[string]string) {
	t.Helper()
	missing := make(map[string]string, len(want))
	for n, tag := range want {
		missing[n] = tag
	}
	for len(missing) > 0 {
		e := r.waitFor(ctx, t, fmt.Sprintf("values %v", missing), func(e event) bool {
			tag, ok := missing[e.name]
			return e.kind == changed && ok && e.tag == tag
		}, nil)
		delete(missing, e.name)
	}
}

// wantError waits for an error of kind k for name ("" for any name)
// wrapping target (nil for any error) and returns it.
func (r *recorder) wantError(ctx context.Context, t *testing.T, k eventKind, name string, target error) error {
	t.Helper()
	want := fmt.Sprintf("%s for %q wrapping %v", k, name, target)
	return r.waitFor(ctx, t, want, func(e event) bool {
		return e.kind == k && (name == "" || e.name == name) && (target == nil || errors.Is(e.err, target))
	}, nil).err
}
