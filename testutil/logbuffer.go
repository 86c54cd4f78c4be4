// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"bytes"
	"sync"
)

// LogBuffer is a bytes.Buffer safe for concurrent use, for the output of a
// logger or a command that goroutines write while a test reads it. The
// zero value is ready to use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
