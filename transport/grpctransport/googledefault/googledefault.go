// SPDX-License-Identifier: Apache-2.0

package googledefault

import (
	"encoding/json"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/google"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport/grpctransport"
)

// Builder builds "google_default" channel credentials; its config, if
// any, is ignored. The zero value is ready to use.
type Builder struct{}

var _ grpctransport.ChannelCredsBuilder = Builder{}

// Name returns "google_default" (bootstrap.CredsGoogleDefault).
func (Builder) Name() string { return bootstrap.CredsGoogleDefault }

// Build returns google.NewDefaultCredentials(). It never fails and
// needs no release.
func (Builder) Build(json.RawMessage) (credentials.Bundle, func(), error) {
	return google.NewDefaultCredentials(), nil, nil
}
