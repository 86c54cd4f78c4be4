// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"errors"

	"google.golang.org/protobuf/proto"
)

// BootstrapJSON is ManagementServer.Bootstrap for a server at address, for
// example one in another process.
func BootstrapJSON(address string, opts BootstrapOptions) []byte {
	return bootstrapJSON(address, opts)
}

// Each calls f with the name and message of every resource of r, in the
// order Update sends them. It returns an error naming every Other entry
// without a Resource (which f is not given); prefix starts its messages.
func (r *Resources) Each(prefix string, f func(name string, m proto.Message)) error {
	return errors.Join(r.eachResource(prefix, f)...)
}
