// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package file

// openNonBlock is 0 where there are no FIFOs that block open(2).
const openNonBlock = 0
