// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/mgmtserver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// ServerProcessEnv is the environment variable StartServerProcess sets in
// the child process: ServeProcess serves only when it is "1".
const ServerProcessEnv = "TESTUTIL_SERVER_PROCESS"

// processStopTimeout bounds how long Stop waits for the child to exit once
// its stdin is closed, before it kills it.
const processStopTimeout = 30 * time.Second

// ProcessCommand is a command of the child process (ProcessOptions.Commands):
// it is given the JSON of Call's arg and returns what Call decodes into
// its result (encoded with encoding/json), or an error that Call returns.
type ProcessCommand func(arg json.RawMessage) (result any, err error)

// ProcessOptions configures ServeProcess.
type ProcessOptions struct {
	// Server configures the child's ManagementServer (over gRPC: InMemory
	// must be false). A nil OnRequest is replaced by one that drops
	// requests: nothing can read the child's request log, so it would
	// only grow.
	Server ServerOptions

	// Commands are the child's own commands, by name, that the parent runs
	// with ServerProcess.Call; they run one at a time, on the goroutine of
	// ServeProcess. The names "update" and "merge" are the built-in
	// commands of ServerProcess.Update and Merge and cannot be used.
	Commands map[string]ProcessCommand
}

// ServerProcess is a ManagementServer running in a child process: the test
// binary itself, run again with -test.run naming a helper test that calls
// ServeProcess (the standard helper-process pattern). A client in the test
// reaches it over gRPC on loopback, so that the test process holds the
// client's memory only, not the server's (its snapshots, its per-stream
// subscriptions and versions): for heap measurements of the client.
//
// The parent talks to the child over the child's stdin and stdout, one
// JSON value per request and per reply; the child exits when its stdin
// closes, so it never outlives the test process. Its stderr is the
// parent's.
//
// All methods are safe for concurrent use; calls are answered one at a
// time.
type ServerProcess struct {
	address string
	cmd     *exec.Cmd
	stdout  io.ReadCloser

	mu       sync.Mutex // serializes calls and Stop
	stdin    io.WriteCloser
	enc      *json.Encoder // on stdin
	dec      *json.Decoder // on stdout
	stopped  bool
	stopOnce sync.Once
	stopErr  error  // set by Stop
	rest     []byte // set by Stop: what the child wrote after its last reply
}

// processRequest is one request of the parent on the child's stdin.
type processRequest struct {
	Command string          `json:"command"`
	Arg     json.RawMessage `json:"arg,omitempty"`
}

// processReply is the child's answer on its stdout; the first one, sent
// unasked, carries the server's address as its result.
type processReply struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// processUpdate is the arg of the built-in commands "update" and "merge".
type processUpdate struct {
	Node      string            `json:"node"`
	Version   string            `json:"version,omitempty"`
	Resources []processResource `json:"resources"`
}

// processResource is one resource of a processUpdate.
type processResource struct {
	Name string `json:"name"`
	Any  []byte `json:"any"` // a marshalled anypb.Any
}

// StartServerProcess starts a ManagementServer in a child process: it runs
// the test binary (os.Args[0]) with -test.run=^helper$ and
// ServerProcessEnv=1 in its environment, where helper is the name of a
// test of the same package that calls ServeProcess (and is skipped in
// normal runs), and waits until the child serves. It calls tb.Fatal if the
// child cannot start, and registers Stop with tb.Cleanup.
//
// For example:
//
//	func TestHelperServerProcess(t *testing.T) {
//		testutil.ServeProcess(t, testutil.ProcessOptions{})
//	}
//
//	func BenchmarkX(b *testing.B) {
//		p := testutil.StartServerProcess(b, "TestHelperServerProcess")
//		if err := p.Update("", res); err != nil { ... }
//		cfg, err := bootstrap.Parse(p.Bootstrap(testutil.BootstrapOptions{}))
//		...
//	}
func StartServerProcess(tb testing.TB, helper string) *ServerProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), ServerProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatalf("testutil: server process: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("testutil: server process: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("testutil: starting the server process: %v", err)
	}
	p := &ServerProcess{
		cmd:    cmd,
		stdout: stdout,
		stdin:  stdin,
		enc:    json.NewEncoder(stdin),
		dec:    json.NewDecoder(bufio.NewReader(stdout)),
	}
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	if err := p.reply(&p.address); err != nil {
		p.Stop()
		tb.Fatalf("testutil: server process (test %s, which must call ServeProcess) did not start: %v; its output:\n%s", helper, err, p.rest)
	}
	return p
}

// Address returns the address clients dial: "127.0.0.1:PORT".
func (p *ServerProcess) Address() string { return p.address }

// Bootstrap is ManagementServer.Bootstrap for the child's server: clients
// reach it with the default transport (grpctransport) and insecure
// credentials.
func (p *ServerProcess) Bootstrap(opts BootstrapOptions) []byte {
	return mgmtserver.BootstrapJSON(p.address, opts)
}

// Update is ManagementServer.Update in the child: it sets the snapshot of
// node nodeID ("" for the default) to r, and returns once the child's
// server has it. Resources are sent marshalled; r.Other keeps its names.
// It returns an error if a resource cannot be marshalled, or the child's
// Update's error, or an error if the child is gone.
func (p *ServerProcess) Update(nodeID string, r Resources) error {
	return p.update("update", nodeID, r)
}

// Merge is Update with only the resources that change: each resource of
// r replaces the one of the same type and name in the node's last
// snapshot (set by Update or Merge; none before), in place, or is
// appended to its type. r.Version is the new snapshot's version, as in
// Update. The child's server then has a new snapshot, whole, as with
// ManagementServer.Update, but only r crosses the pipe.
func (p *ServerProcess) Merge(nodeID string, r Resources) error {
	return p.update("merge", nodeID, r)
}

func (p *ServerProcess) update(command, nodeID string, r Resources) error {
	u := processUpdate{Node: nodeID, Version: r.Version}
	var errs []error
	add := func(name string, m proto.Message) {
		a := &anypb.Any{}
		err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true})
		if err == nil {
			var b []byte
			if b, err = proto.Marshal(a); err == nil {
				u.Resources = append(u.Resources, processResource{Name: name, Any: b})
				return
			}
		}
		errs = append(errs, fmt.Errorf("testutil: server process %s: resource %q: %w", command, name, err))
	}
	if err := r.Each(add); err != nil {
		errs = append(errs, fmt.Errorf("testutil: server process %s: %w", command, err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return p.Call(command, u, nil)
}

// Call runs the child's command (a ProcessOptions.Commands entry) with
// arg encoded as JSON, and decodes its result into result (a pointer, or
// nil to drop it). It returns the command's error, or an error if the
// child is gone or Stop was called.
func (p *ServerProcess) Call(command string, arg, result any) error {
	req := processRequest{Command: command}
	if arg != nil {
		b, err := json.Marshal(arg)
		if err != nil {
			return fmt.Errorf("testutil: server process %s: encoding the argument: %w", command, err)
		}
		req.Arg = b
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return fmt.Errorf("testutil: server process %s: stopped", command)
	}
	if err := p.enc.Encode(req); err != nil {
		return fmt.Errorf("testutil: server process %s: %w", command, err)
	}
	if err := p.reply(result); err != nil {
		return fmt.Errorf("testutil: server process %s: %w", command, err)
	}
	return nil
}

// reply reads the child's next reply and decodes its result into result
// (nil drops it). p.mu is held, or p is not yet shared.
func (p *ServerProcess) reply(result any) error {
	var r processReply
	if err := p.dec.Decode(&r); err != nil {
		return fmt.Errorf("reading the reply: %w", err)
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("decoding the result: %w", err)
	}
	return nil
}

// Stop closes the child's stdin, which makes it stop its server and exit,
// and waits for it; a child still running after 30 s is killed. It
// returns an error if the child did not exit cleanly (its remaining
// output is in the error). Stop is idempotent; later calls return the
// first one's result.
func (p *ServerProcess) Stop() error {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		p.stdin.Close()
		p.mu.Unlock()
		// The rest is the test framework's verdict ("PASS", or a
		// failure's log). It must be read before Wait, which closes the
		// pipe.
		exited := make(chan error, 1)
		go func() {
			p.rest, _ = io.ReadAll(io.MultiReader(p.dec.Buffered(), p.stdout))
			exited <- p.cmd.Wait()
		}()
		timer := time.NewTimer(processStopTimeout)
		defer timer.Stop()
		var err error
		select {
		case err = <-exited:
		case <-timer.C:
			p.cmd.Process.Kill()
			err = fmt.Errorf("killed after %v: %w", processStopTimeout, <-exited)
		}
		if err != nil {
			p.stopErr = fmt.Errorf("testutil: server process: %w; its output:\n%s", err, p.rest)
		}
	})
	return p.stopErr
}

// ServeProcess is the child's side of StartServerProcess, to be called by
// a helper test. Unless the environment variable ServerProcessEnv is "1",
// it skips the test (t.Skip): in a normal test run the helper test does
// nothing. Otherwise it starts a ManagementServer over gRPC on loopback
// with opts.Server, writes its address on stdout, then answers the
// parent's requests read from stdin (ServerProcess.Update, Merge, Call),
// one at a time, until stdin closes (the parent called Stop, or is gone),
// and returns; the server is stopped when the test ends. A request that
// cannot be read ends it with t.Fatal.
func ServeProcess(t testing.TB, opts ProcessOptions) {
	t.Helper()
	if os.Getenv(ServerProcessEnv) != "1" {
		t.Skip("testutil: a server process helper; runs only in the child of StartServerProcess")
	}
	if opts.Server.InMemory {
		t.Fatal("testutil: ServeProcess: the server cannot be InMemory")
	}
	if opts.Server.OnRequest == nil {
		opts.Server.OnRequest = func(*Request) {}
	}
	// Not NewManagementServer: Update's errors go to the parent, not to
	// this test.
	ms, err := StartManagementServer(opts.Server)
	if err != nil {
		t.Fatalf("testutil: ServeProcess: %v", err)
	}
	t.Cleanup(ms.Stop)
	snaps := map[string]*Resources{} // node → last snapshot of update and merge
	enc := json.NewEncoder(os.Stdout)
	send := func(result any, err error) {
		var r processReply
		if err != nil {
			r.Error = err.Error()
		} else if r.Result, err = json.Marshal(result); err != nil {
			r.Error = fmt.Sprintf("encoding the result: %v", err)
		}
		if err := enc.Encode(r); err != nil {
			t.Fatalf("testutil: ServeProcess: writing a reply: %v", err)
		}
	}
	send(ms.Address(), nil)
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var req processRequest
		if err := dec.Decode(&req); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("testutil: ServeProcess: reading a request: %v", err)
		}
		switch req.Command {
		case "update", "merge":
			send(nil, serveUpdate(ms, snaps, req))
		default:
			f := opts.Commands[req.Command]
			if f == nil {
				send(nil, fmt.Errorf("testutil: server process: unknown command %q", req.Command))
				continue
			}
			send(f(req.Arg))
		}
	}
}

// serveUpdate runs the built-in command "update" or "merge" on ms.
func serveUpdate(ms *ManagementServer, snaps map[string]*Resources, req processRequest) error {
	var u processUpdate
	if err := json.Unmarshal(req.Arg, &u); err != nil {
		return fmt.Errorf("testutil: server process %s: %w", req.Command, err)
	}
	merge := req.Command == "merge"
	r := &Resources{Version: u.Version}
	if old := snaps[u.Node]; merge && old != nil {
		// A copy: the last snapshot stays if Update fails.
		r.Listeners = slices.Clone(old.Listeners)
		r.Routes = slices.Clone(old.Routes)
		r.Clusters = slices.Clone(old.Clusters)
		r.Endpoints = slices.Clone(old.Endpoints)
		r.Other = slices.Clone(old.Other)
	}
	for _, pr := range u.Resources {
		a := &anypb.Any{}
		if err := proto.Unmarshal(pr.Any, a); err != nil {
			return fmt.Errorf("testutil: server process %s: resource %q: %w", req.Command, pr.Name, err)
		}
		m, err := a.UnmarshalNew()
		if err != nil {
			return fmt.Errorf("testutil: server process %s: resource %q: %w", req.Command, pr.Name, err)
		}
		switch m := m.(type) {
		case *v3listenerpb.Listener:
			r.Listeners = mergeNamed(merge, r.Listeners, m, (*v3listenerpb.Listener).GetName)
		case *v3routepb.RouteConfiguration:
			r.Routes = mergeNamed(merge, r.Routes, m, (*v3routepb.RouteConfiguration).GetName)
		case *v3clusterpb.Cluster:
			r.Clusters = mergeNamed(merge, r.Clusters, m, (*v3clusterpb.Cluster).GetName)
		case *v3endpointpb.ClusterLoadAssignment:
			r.Endpoints = mergeNamed(merge, r.Endpoints, m, (*v3endpointpb.ClusterLoadAssignment).GetClusterName)
		default:
			o := NamedResource{Name: pr.Name, Resource: m}
			r.Other = mergeNamed(merge, r.Other, o, func(o NamedResource) string {
				return string(o.Resource.ProtoReflect().Descriptor().FullName()) + "/" + o.Name
			})
		}
	}
	if err := ms.Update(u.Node, *r); err != nil {
		return err
	}
	snaps[u.Node] = r
	return nil
}

// mergeNamed appends m to s; with merge, m replaces instead the element
// of s of the same name, if any.
func mergeNamed[M any](merge bool, s []M, m M, name func(M) string) []M {
	if merge {
		for i, old := range s {
			if name(old) == name(m) {
				s[i] = m
				return s
			}
		}
	}
	return append(s, m)
}
