// SPDX-License-Identifier: Apache-2.0

package client

// DirStorePath returns the file in which s, a DirStore, keeps the value of
// server, typeURL and name.
func DirStorePath(s Store, server, typeURL, name string) string {
	return s.(*dirStore).path(server, typeURL, name)
}

// GlobMatch is globMatch.
var GlobMatch = globMatch
