// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/credentials/tls/certprovider"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil/certs"
)

// countingPlugin is a plugin whose providers count their builds and
// closes, per config string.
type countingPlugin struct {
	name string
	mu   sync.Mutex
	live map[string]int // running providers by "config/certname"
	made int
}

func (p *countingPlugin) Name() string { return p.name }

func (p *countingPlugin) ParseConfig(raw json.RawMessage) (ProviderConfig, error) {
	var c struct{ ID string }
	if err := json.Unmarshal(raw, &c); err != nil || c.ID == "" {
		return nil, errors.New("ID: missing")
	}
	return countingConfig{p: p, id: c.ID}, nil
}

type countingConfig struct {
	p  *countingPlugin
	id string
}

func (c countingConfig) Build(opts certprovider.BuildOptions) (certprovider.Provider, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	k := c.id + "/" + opts.CertName
	c.p.live[k]++
	c.p.made++
	return &countingProvider{p: c.p, key: k}, nil
}

func (p *countingPlugin) running() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int)
	for k, v := range p.live {
		if v != 0 {
			out[k] = v
		}
	}
	return out, p.made
}

type countingProvider struct {
	p   *countingPlugin
	key string
}

func (c *countingProvider) KeyMaterial(context.Context) (*certprovider.KeyMaterial, error) {
	return &certprovider.KeyMaterial{}, nil
}

func (c *countingProvider) Close() {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.p.live[c.key]--
}

// TestProviderStore_Sharing checks that providers are shared by instance,
// certificate name and wants, started on first use, and stopped when the
// last user closes its handle; that closing twice releases once; and
// that a released handle gives no key material.
func TestProviderStore_Sharing(t *testing.T) {
	plugin := &countingPlugin{name: "counting", live: make(map[string]int)}
	s := NewProviderStore(map[string]bootstrap.CertificateProvider{
		"a": {PluginName: "counting", Config: json.RawMessage(`{"ID":"a"}`)},
		"b": {PluginName: "counting", Config: json.RawMessage(`{"ID":"b"}`)},
	}, WithProviderPlugins(plugin))
	if live, made := plugin.running(); len(live) != 0 || made != 0 {
		t.Fatalf("after NewProviderStore: running %v, %d made; want none", live, made)
	}
	get := func(instance, cert string) certprovider.Provider {
		t.Helper()
		p, err := s.Provider(instance, certprovider.BuildOptions{CertName: cert, WantRoot: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a1, a2, aOther, b := get("a", ""), get("a", ""), get("a", "other"), get("b", "")
	if live, made := plugin.running(); made != 3 || fmt.Sprint(live) != "map[a/:1 a/other:1 b/:1]" {
		t.Fatalf("running %v, %d made; want a/, a/other and b, 3 made", live, made)
	}
	a1.Close()
	a1.Close() // idempotent
	if _, err := a1.KeyMaterial(t.Context()); err == nil {
		t.Error("KeyMaterial of a closed handle succeeded")
	}
	if _, err := a2.KeyMaterial(t.Context()); err != nil {
		t.Errorf("KeyMaterial of the other handle: %v", err)
	}
	if live, _ := plugin.running(); live["a/"] != 1 {
		t.Fatalf("after one of two users closed: running %v, want a/ still running", live)
	}
	a2.Close()
	aOther.Close()
	b.Close()
	if live, _ := plugin.running(); len(live) != 0 {
		t.Fatalf("after every user closed: running %v, want none", live)
	}
	get("a", "").Close()
	if _, made := plugin.running(); made != 4 {
		t.Errorf("%d made after a new use, want 4 (a stopped provider is started again)", made)
	}
}

// TestProviderStore_Errors checks the errors of unusable instances: not in
// the bootstrap, of an unknown plugin, with an invalid config.
func TestProviderStore_Errors(t *testing.T) {
	s := NewProviderStore(map[string]bootstrap.CertificateProvider{
		"unknown-plugin": {PluginName: "nope"},
		"bad":            {PluginName: "file_watcher", Config: json.RawMessage(`{"certificate_file":"/c.pem"}`)},
		"good":           {PluginName: "file_watcher", Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem"}`)},
	})
	if got := strings.Join(s.InstanceNames(), ","); got != "bad,good,unknown-plugin" {
		t.Errorf("InstanceNames = %s", got)
	}
	for _, tc := range []struct{ instance, want string }{
		{"missing", `certificate provider instance not in the bootstrap's certificate_providers: "missing"`},
		{"unknown-plugin", `certificate provider instance "unknown-plugin": unknown plugin_name "nope" (known: ["file_watcher"]; add plugins with xdscreds.WithProviderPlugins)`},
		{"bad", `certificate provider instance "bad" (plugin "file_watcher"): config: private_key_file: must be set when certificate_file is set`},
	} {
		err := s.Check(tc.instance)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Check(%q) = %v, want %s", tc.instance, err, tc.want)
		}
		if _, err := s.Provider(tc.instance, certprovider.BuildOptions{WantRoot: true}); err == nil || err.Error() != tc.want {
			t.Errorf("Provider(%q) = %v, want %s", tc.instance, err, tc.want)
		}
	}
	if !errors.Is(s.Check("missing"), ErrUnknownInstance) {
		t.Error("Check of a missing instance does not wrap ErrUnknownInstance")
	}
	if err := s.Check("good"); err != nil {
		t.Errorf("Check(good) = %v", err)
	}
	if _, err := s.Provider("good", certprovider.BuildOptions{WantIdentity: true}); err == nil || !strings.Contains(err.Error(), "no certificate_file") {
		t.Errorf("Provider(good) for an identity = %v, want an error saying there is no certificate_file", err)
	}
}

func TestProviderStore_PluginReplacesFileWatcher(t *testing.T) {
	plugin := &countingPlugin{name: FileWatcherPluginName, live: make(map[string]int)}
	s := NewProviderStore(map[string]bootstrap.CertificateProvider{"fw": {PluginName: "file_watcher", Config: json.RawMessage(`{"ID":"x"}`)}}, WithProviderPlugins(plugin))
	p, err := s.Provider("fw", certprovider.BuildOptions{WantRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, made := plugin.running(); made != 1 {
		t.Errorf("the replacing plugin made %d providers, want 1", made)
	}
}

func TestFileWatcher_ParseConfig(t *testing.T) {
	tests := []struct {
		config  string
		want    fileWatcherConfig
		wantErr string
	}{
		{config: `{"certificate_file":"/d/c.pem","private_key_file":"/d/k.pem","ca_certificate_file":"/ca.pem","refresh_interval":"60s"}`,
			want: fileWatcherConfig{certFile: "/d/c.pem", keyFile: "/d/k.pem", caFile: "/ca.pem", refresh: time.Minute}},
		{config: `{"spiffe_trust_bundle_map_file":"/b.json","unknown":1}`, want: fileWatcherConfig{bundleFile: "/b.json", refresh: DefaultRefreshInterval}},
		{config: `{"ca_certificate_file":"/ca.pem","refresh_interval":"0.5s","certificate_file":null}`, want: fileWatcherConfig{caFile: "/ca.pem", refresh: 500 * time.Millisecond}},
		{config: ``, wantErr: "missing"},
		{config: `null`, wantErr: "missing"},
		{config: `[]`, wantErr: "want a JSON object"},
		{config: `{}`, wantErr: "no file"},
		{config: `{"private_key_file":"/k.pem"}`, wantErr: "certificate_file: must be set when private_key_file is set"},
		{config: `{"certificate_file":"/a/c.pem","private_key_file":"/b/k.pem"}`, wantErr: "must be in the same directory"},
		{config: `{"ca_certificate_file":1}`, wantErr: "ca_certificate_file: want a string, got 1"},
		{config: `{"ca_certificate_file":"/ca.pem","refresh_interval":"10"}`, wantErr: "refresh_interval: want a duration"},
		{config: `{"ca_certificate_file":"/ca.pem","refresh_interval":60}`, wantErr: "refresh_interval: want a duration"},
		{config: `{"ca_certificate_file":"/ca.pem","refresh_interval":"0s"}`, wantErr: "refresh_interval: must be greater than zero"},
		{config: `{"ca_certificate_file":"/ca.pem","refresh_interval":"-1s"}`, wantErr: "refresh_interval: must be greater than zero"},
	}
	for _, tc := range tests {
		got, err := fileWatcherPlugin{}.ParseConfig(json.RawMessage(tc.config))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseConfig(%s) = %v, want an error containing %q", tc.config, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseConfig(%s): %v", tc.config, err)
			continue
		}
		if c := *got.(*fileWatcherConfig); c != tc.want {
			t.Errorf("ParseConfig(%s) = %+v, want %+v", tc.config, c, tc.want)
		}
	}
}

// fileWatcherFiles are the files of a file_watcher instance in a
// directory of the test.
type fileWatcherFiles struct{ cert, key, ca, bundle string }

func newFileWatcherFiles(t *testing.T) fileWatcherFiles {
	dir := t.TempDir()
	return fileWatcherFiles{cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem"), ca: filepath.Join(dir, "ca.pem"), bundle: filepath.Join(dir, "bundle.json")}
}

func (f fileWatcherFiles) store(t *testing.T, refresh time.Duration) *ProviderStore {
	t.Helper()
	cfg, err := json.Marshal(map[string]string{
		"certificate_file": f.cert, "private_key_file": f.key, "ca_certificate_file": f.ca,
		"spiffe_trust_bundle_map_file": f.bundle, "refresh_interval": fmt.Sprintf("%gs", refresh.Seconds()),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := NewProviderStore(map[string]bootstrap.CertificateProvider{"fw": {PluginName: "file_watcher", Config: cfg}})
	if err := s.Check("fw"); err != nil {
		t.Fatal(err)
	}
	return s
}

// leafOf returns the SPIFFE ID of the identity certificate of p.
func leafOf(t *testing.T, p certprovider.Provider) string {
	t.Helper()
	km, err := p.KeyMaterial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(km.Certs) != 1 || km.Certs[0].Leaf == nil || len(km.Certs[0].Leaf.URIs) != 1 {
		t.Fatalf("key material %+v, want one certificate with one URI SAN", km)
	}
	return km.Certs[0].Leaf.URIs[0].String()
}

// TestFileWatcher_Rotation checks, in fake time, that a file_watcher
// provider gives the new identity certificate once refresh_interval has
// passed after its files were replaced, not before, and that it keeps
// the last good certificate when the files disappear or are invalid
// (gRFC A29).
func TestFileWatcher_Rotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const refresh = time.Minute
		f := newFileWatcherFiles(t)
		ca := newCA(t, "spiffe://a.example")
		if err := issue(t, ca, certs.Options{SPIFFEID: "spiffe://a.example/v1"}).WriteFiles(f.cert, f.key); err != nil {
			t.Fatal(err)
		}
		s := f.store(t, refresh)
		p, err := s.Provider("fw", certprovider.BuildOptions{WantIdentity: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if got := leafOf(t, p); got != "spiffe://a.example/v1" {
			t.Fatalf("identity %s, want v1", got)
		}

		if err := issue(t, ca, certs.Options{SPIFFEID: "spiffe://a.example/v2"}).WriteFiles(f.cert, f.key); err != nil {
			t.Fatal(err)
		}
		time.Sleep(refresh / 2)
		synctest.Wait()
		if got := leafOf(t, p); got != "spiffe://a.example/v1" {
			t.Fatalf("identity %s half a refresh_interval after the rotation, want still v1", got)
		}
		time.Sleep(refresh / 2)
		synctest.Wait()
		if got := leafOf(t, p); got != "spiffe://a.example/v2" {
			t.Fatalf("identity %s a refresh_interval after the rotation, want v2", got)
		}

		// The files disappear, then come back invalid: v2 stays.
		if err := os.Remove(f.cert); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * refresh)
		synctest.Wait()
		if got := leafOf(t, p); got != "spiffe://a.example/v2" {
			t.Fatalf("identity %s after the certificate file disappeared, want the last good one, v2", got)
		}
		if err := certs.WriteFileAtomic(f.cert, []byte("not a certificate")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * refresh)
		synctest.Wait()
		if got := leafOf(t, p); got != "spiffe://a.example/v2" {
			t.Fatalf("identity %s after the certificate file became invalid, want the last good one, v2", got)
		}
	})
}

// TestFileWatcher_Roots checks the root key material: CA certificates
// from ca_certificate_file, and the SPIFFE trust bundle map, which wins
// over them, from spiffe_trust_bundle_map_file (gRFC A87).
func TestFileWatcher_Roots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFileWatcherFiles(t)
		caA, caB := newCA(t, "spiffe://a.example"), newCA(t, "spiffe://b.example")
		if err := caA.WriteFile(f.ca); err != nil {
			t.Fatal(err)
		}
		s := NewProviderStore(map[string]bootstrap.CertificateProvider{
			"ca":     {PluginName: "file_watcher", Config: json.RawMessage(fmt.Sprintf(`{"ca_certificate_file":%q}`, f.ca))},
			"spiffe": {PluginName: "file_watcher", Config: json.RawMessage(fmt.Sprintf(`{"ca_certificate_file":%q,"spiffe_trust_bundle_map_file":%q}`, f.ca, f.bundle))},
		})
		bm, err := certs.BundleMap(caA, caB)
		if err != nil {
			t.Fatal(err)
		}
		if err := certs.WriteFileAtomic(f.bundle, bm); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
		defer cancel()

		p, err := s.Provider("ca", certprovider.BuildOptions{WantRoot: true})
		if err != nil {
			t.Fatal(err)
		}
		km, err := p.KeyMaterial(ctx)
		p.Close()
		if err != nil || km.Roots == nil || km.SPIFFEBundleMap != nil {
			t.Fatalf("KeyMaterial of ca = %+v, %v; want roots only", km, err)
		}

		p, err = s.Provider("spiffe", certprovider.BuildOptions{WantRoot: true})
		if err != nil {
			t.Fatal(err)
		}
		km, err = p.KeyMaterial(ctx)
		p.Close()
		if err != nil || len(km.SPIFFEBundleMap) != 2 || km.SPIFFEBundleMap["b.example"] == nil || !km.SPIFFEBundleMap["b.example"].HasX509Authority(caB.Cert) {
			t.Fatalf("KeyMaterial of spiffe = %+v, %v; want the bundles of a.example and b.example", km, err)
		}
	})
}
