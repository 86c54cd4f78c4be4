// SPDX-License-Identifier: Apache-2.0

package file

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watch signals the returned channel (cap 1) when the source at path may
// have changed, until ctx ends. It watches the directory holding a file
// (or the directory itself) with file-system notifications, so that a
// file replaced by a rename is seen; when notifications are not available,
// or poll > 0, it signals every poll (DefaultPollInterval by default)
// instead, and the reader compares contents. Its goroutine is counted in
// wg, which is done once the notifications are released (or the polling
// timer stopped) after ctx ends.
func watch(ctx context.Context, wg *sync.WaitGroup, path string, poll time.Duration) <-chan struct{} {
	changes := make(chan struct{}, 1)
	signal := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	if poll <= 0 {
		if w, err := newNotifier(path); err == nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer w.Close()
				for {
					select {
					case <-ctx.Done():
						return
					case _, ok := <-w.Events:
						if !ok {
							return
						}
						signal()
					case _, ok := <-w.Errors:
						if !ok {
							return
						}
						signal() // events may have been lost: re-read
					}
				}
			}()
			return changes
		}
		poll = DefaultPollInterval
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				signal()
			}
		}
	}()
	return changes
}

// newNotifier returns an fsnotify watcher of the directory of path (path
// itself when it is a directory).
func newNotifier(path string) (*fsnotify.Watcher, error) {
	dir := path
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		dir = filepath.Dir(path)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}
