// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package testutil

import "time"

// ProcessCPU returns the CPU time the process has used so far: 0 here,
// where it is not measured.
func ProcessCPU() time.Duration { return 0 }
