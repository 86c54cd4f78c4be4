// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
)

const (
	// defaultTestTimeout bounds everything that is expected to happen.
	defaultTestTimeout = 10 * time.Second
	// defaultTestShortTimeout is how long to wait for something that is
	// expected not to happen.
	defaultTestShortTimeout = 10 * time.Millisecond
)

// failMethod is a method the echo server rejects with PermissionDenied.
const failMethod = "/test.Echo/Fail"

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// serverCodec is the echo server's pass-through codec.
type serverCodec struct{}

func (serverCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

func (serverCodec) Name() string { return "" }

// echoHandler echoes every message of any stream back, except on
// failMethod, which it rejects.
func echoHandler(_ any, ss grpc.ServerStream) error {
	if m, _ := grpc.MethodFromServerStream(ss); m == failMethod {
		return status.Error(codes.PermissionDenied, "rejected by test server")
	}
	for {
		var msg []byte
		if err := ss.RecvMsg(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(msg); err != nil {
			return err
		}
	}
}

// countingListener counts the connections it accepts and those still open
// (not yet closed by the server).
type countingListener struct {
	net.Listener
	accepted atomic.Int32
	open     atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// startServer starts a gRPC server on 127.0.0.1:0 with opts; register adds
// services (nil: the raw echo handler for every method). It is stopped at
// the end of the test.
func startServer(t *testing.T, register func(*grpc.Server), opts ...grpc.ServerOption) *countingListener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	cl := &countingListener{Listener: lis}
	if register == nil {
		opts = append(opts, grpc.ForceServerCodecV2(serverCodec{}), grpc.UnknownServiceHandler(echoHandler))
	}
	s := grpc.NewServer(opts...)
	if register != nil {
		register(s)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(cl)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return cl
}

// startEchoServer starts a plaintext echo server.
func startEchoServer(t *testing.T) *countingListener {
	t.Helper()
	return startServer(t, nil)
}

func insecureConfig(addr string) *bootstrap.ServerConfig {
	return &bootstrap.ServerConfig{
		ServerURI:    addr,
		ChannelCreds: bootstrap.ChannelCreds{Type: "insecure"},
	}
}

// build calls b.Dial and closes the Transport at the end of the test
// (Close is idempotent, so tests may close it earlier).
func build(t *testing.T, b transport.Dialer, sc *bootstrap.ServerConfig) transport.Transport {
	t.Helper()
	tr, err := b.Dial(sc, transport.BuildOptions{})
	if err != nil {
		t.Fatalf("Dial(%+v): %v", sc, err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// verifyEcho sends msg on st and checks that the same bytes come back.
func verifyEcho(st transport.Stream, msg []byte) error {
	want := string(msg)
	if err := st.Send(msg); err != nil {
		return fmt.Errorf("Send: %w", err)
	}
	got, err := st.Recv()
	if err != nil {
		return fmt.Errorf("Recv: %w", err)
	}
	if string(got) != want {
		return fmt.Errorf("Recv = %q, want %q", got, want)
	}
	return nil
}

// verifyNewStreamEcho opens a stream on tr and checks one echo.
func verifyNewStreamEcho(ctx context.Context, tr transport.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		return fmt.Errorf("NewStream: %w", err)
	}
	return verifyEcho(st, []byte("ping"))
}

// waitFor polls cond until it holds or ctx is done.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// testCA is a certificate authority for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key signed by ca, for a server
// (SANs 127.0.0.1 and localhost) or a client.
func (ca *testCA) issue(t *testing.T, name string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// writeFile writes data to name in dir atomically (so that a certificate
// watcher never reads half a file) and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverTLSOption returns server credentials with a certificate from ca;
// when clientCA is non-nil the server requires a client certificate
// signed by it.
func serverTLSOption(t *testing.T, ca, clientCA *testCA) grpc.ServerOption {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, "server", true)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA.cert)
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return grpc.Creds(credentials.NewTLS(cfg))
}
