// SPDX-License-Identifier: Apache-2.0

package testutil_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"

	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestHelperServerProcess is the child of TestServerProcess: it serves
// only when started by StartServerProcess, and is skipped otherwise. Its
// commands: "requests" returns how many requests the server received,
// "echo" returns its argument, "fail" an error.
func TestHelperServerProcess(t *testing.T) {
	var requests atomic.Int64
	testutil.ServeProcess(t, testutil.ProcessOptions{
		Server: testutil.ServerOptions{OnRequest: func(*testutil.Request) { requests.Add(1) }},
		Commands: map[string]testutil.ProcessCommand{
			"requests": func(json.RawMessage) (any, error) { return requests.Load(), nil },
			"echo":     func(arg json.RawMessage) (any, error) { return arg, nil },
			"fail":     func(json.RawMessage) (any, error) { return nil, errors.New("failed as asked") },
		},
	})
}

// TestServerProcess serves a chain from a child process to a client over
// gRPC, changes one resource with Merge, and runs the child's commands.
func TestServerProcess(t *testing.T) {
	ctx := testContext(t)
	p := testutil.StartServerProcess(t, "TestHelperServerProcess")
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{8080}})
	// A custom type travels too, with its name.
	res.Other = []testutil.NamedResource{{Name: "custom", Resource: structpb.NewStringValue("v")}}
	if err := p.Update("", res); err != nil {
		t.Fatalf("Update() = %v", err)
	}

	cfg, err := bootstrap.Parse(p.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatalf("bootstrap.Parse() = %v", err)
	}
	c, err := client.New(cfg) // the default transport: grpctransport
	if err != nil {
		t.Fatalf("client.New() = %v", err)
	}
	defer c.Close()
	ports := make(chan string, 10)
	defer client.Watch(c, resources.EndpointsType, "eds-svc", watcher.Funcs[*resources.Endpoints]{
		OnChanged: func(e *resources.Endpoints) {
			ports <- fmt.Sprint(e.Localities[0].Endpoints[0].Addresses)
		},
	})()
	wantPort := func(want string) {
		t.Helper()
		select {
		case got := <-ports:
			if got != want {
				t.Fatalf("endpoints %s, want %s", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no endpoints %s: %v", want, ctx.Err())
		}
	}
	wantPort("[127.0.0.1:8080]")

	// Merge replaces the ClusterLoadAssignment of the same name and keeps
	// the rest of the snapshot.
	if err := p.Merge("", testutil.Resources{Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("eds-svc", "127.0.0.1", 9090)}}); err != nil {
		t.Fatalf("Merge() = %v", err)
	}
	wantPort("[127.0.0.1:9090]")
	gotCluster := make(chan struct{})
	defer client.Watch(c, resources.ClusterType, "cluster-svc", watcher.Funcs[*resources.Cluster]{
		OnChanged: func(*resources.Cluster) { close(gotCluster) },
	})()
	select {
	case <-gotCluster:
	case <-ctx.Done():
		t.Fatalf("no Cluster cluster-svc after Merge: %v", ctx.Err())
	}

	var n int64
	if err := p.Call("requests", nil, &n); err != nil || n == 0 {
		t.Errorf("Call(requests) = %d, %v; want > 0, nil", n, err)
	}
	var echo map[string]int
	if err := p.Call("echo", map[string]int{"a": 1}, &echo); err != nil || echo["a"] != 1 {
		t.Errorf("Call(echo) = %v, %v; want map[a:1], nil", echo, err)
	}
	if err := p.Call("fail", nil, nil); err == nil || err.Error() != "testutil: server process fail: failed as asked" {
		t.Errorf("Call(fail) = %v, want the command's error", err)
	}
	if err := p.Update("", testutil.Resources{Other: []testutil.NamedResource{{Name: "x"}}}); err == nil || !strings.Contains(err.Error(), `Resources.Other[0] ("x") has no Resource`) {
		t.Errorf("Update(Other without Resource) = %v, want an error naming it", err)
	}
	if err := p.Call("nope", nil, nil); err == nil {
		t.Error("Call(nope) = nil, want an unknown command error")
	}

	c.Close()
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if err := p.Call("echo", 1, nil); err == nil {
		t.Error("Call after Stop = nil, want an error")
	}
}

// TestHelperNotServing is a helper test that does not call ServeProcess,
// for TestServerProcess_HelperNotServing.
func TestHelperNotServing(*testing.T) {}

// TestServerProcess_HelperNotServing: a child that does not serve fails
// the start with an error that names the helper and holds the child's
// output.
func TestServerProcess_HelperNotServing(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { recover() }()
		testutil.StartServerProcess(ft, "TestHelperNotServing")
	}()
	if !strings.Contains(ft.msg, "TestHelperNotServing") || !strings.Contains(ft.msg, "its output:\nPASS") {
		t.Errorf("StartServerProcess failed with %q, want the helper's name and the child's output", ft.msg)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and
// panics, for a deferred recover.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}
