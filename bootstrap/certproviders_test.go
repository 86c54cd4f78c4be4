// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"slices"
	"testing"
)

func TestConfig_CertificateProviderNames(t *testing.T) {
	c, err := Parse([]byte(`{"xds_servers":[{"server_uri":"x","channel_creds":[{"type":"insecure"}]}],
		"certificate_providers":{"z":{"plugin_name":"file_watcher"},"a":{"plugin_name":"other"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CertificateProviderNames(); !slices.Equal(got, []string{"a", "z"}) {
		t.Errorf("CertificateProviderNames() = %q, want [a z]", got)
	}
	if got := (&Config{}).CertificateProviderNames(); got != nil {
		t.Errorf("CertificateProviderNames() of a config without providers = %q, want nil", got)
	}
}
