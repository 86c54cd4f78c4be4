// SPDX-License-Identifier: Apache-2.0

//go:build unix

package file

import "syscall"

// openNonBlock makes open(2) of a FIFO without a writer return at once
// instead of waiting for one; it changes nothing for regular files.
const openNonBlock = syscall.O_NONBLOCK
