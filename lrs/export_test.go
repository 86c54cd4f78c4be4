// SPDX-License-Identifier: Apache-2.0

package lrs

// DefaultBackoff is the policy of WithBackoff's default, for its tests.
var DefaultBackoff = defaultBackoff
