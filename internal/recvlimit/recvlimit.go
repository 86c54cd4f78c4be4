// SPDX-License-Identifier: Apache-2.0

// Package recvlimit chooses the size limit a transport applies to what it
// receives, and the words that tell a user how to raise it: the
// transport's own option when it was given, else the client's
// (transport.BuildOptions.MaxRecvMsgSize, client.WithMaxRecvMsgSize),
// else the transport's default, which either raises. The transports of
// this module name their limit this way in the errors that wrap
// transport.ErrMessageTooLarge, so that a hint never names an option that
// would not change the limit.
package recvlimit

// ClientOption is the client's option that sets
// transport.BuildOptions.MaxRecvMsgSize.
const ClientOption = "client.WithMaxRecvMsgSize"

// Limit is a size limit in bytes and how to raise it.
type Limit struct {
	Bytes int64
	// Hint names the option that raises the limit:
	// "raise it with grpctransport.WithMaxRecvMsgSize".
	Hint string
}

// Choose returns the limit of a transport whose own option, named option
// (package-qualified: "rest.WithMaxResponseBytes"), set own bytes (zero
// when not given), whose client asks for client bytes (zero when not
// given), and whose default is def bytes.
func Choose(own int64, option string, client int, def int64) Limit {
	switch {
	case own > 0:
		return Limit{Bytes: own, Hint: "raise it with " + option}
	case client > 0:
		return Limit{Bytes: int64(client), Hint: "raise it with " + ClientOption}
	default:
		return Limit{Bytes: def, Hint: "raise it with " + ClientOption + " or " + option}
	}
}
