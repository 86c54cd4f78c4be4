// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/proxyless/xds/xdshttp"
)

// BenchmarkTransport compares a GET through the xDS Transport (route,
// pick, circuit breaker, the endpoint's *http.Transport) with the same GET
// through a plain *http.Transport to the same backend, keep-alive
// connections, small bodies, the requests sent in parallel. The target
// (issue 29) is xds ≥ 0.9 × plain in requests per second.
func BenchmarkTransport(b *testing.B) {
	for _, name := range []string{"plain", "xds"} {
		b.Run(name, func(b *testing.B) {
			be := startBackend(b, "b", nil)
			base := http.DefaultTransport.(*http.Transport).Clone()
			base.MaxIdleConnsPerHost = 100
			var hc *http.Client
			url := be.srv.URL + "/bench"
			if name == "plain" {
				hc = &http.Client{Transport: base}
				b.Cleanup(base.CloseIdleConnections)
			} else {
				e := newCliEnv(b, xdshttp.WithBaseTransport(base))
				e.update(b, clientResources("svc", be))
				hc, url = e.hc, "http://svc/bench"
			}
			if resp, err := hc.Get(url); err != nil { // the first request waits for the configuration
				b.Fatal(err)
			} else {
				resp.Body.Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := hc.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}
