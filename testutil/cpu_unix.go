// SPDX-License-Identifier: Apache-2.0

//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user and system) the process has used
// so far; 0 where the system cannot tell. The difference of two calls
// measures the CPU a piece of work took, all goroutines included, which
// other processes on the machine disturb less than wall-clock time.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
