// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// recvAfterSend opens a stream on tr, sends msg and returns the error of
// the first Recv (nil if a message came back).
func recvAfterSend(t *testing.T, tr transport.Transport, msg []byte) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatalf("NewStream: %v", err)
	}
	if err := st.Send(msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	_, err = st.Recv()
	return err
}

// TestRecv_SizeLimits checks the errors of size limits (issue "bounded
// failure"): a response above the client's receive limit and a request
// above the server's limit both wrap transport.ErrMessageTooLarge and keep
// the gRPC status, each with a text naming the limit or the request size;
// a ResourceExhausted status that is not about size (a quota) does not.
func TestRecv_SizeLimits(t *testing.T) {
	quota := func(_ any, ss grpc.ServerStream) error {
		var msg []byte
		if err := ss.RecvMsg(&msg); err != nil {
			return err
		}
		return status.Error(codes.ResourceExhausted, "quota exceeded")
	}
	for _, tc := range []struct {
		name       string
		serverOpts []grpc.ServerOption // nil: the echo server
		recvLimit  int
		msgSize    int
		wantTooBig bool
		wantText   []string
	}{{
		name:       "response above the receive limit",
		recvLimit:  1024,
		msgSize:    2048,
		wantTooBig: true,
		wantText:   []string{"receive limit of 1024 bytes", "WithMaxRecvMsgSize"},
	}, {
		name:       "response at the receive limit",
		recvLimit:  1024,
		msgSize:    1024,
		wantTooBig: false,
	}, {
		name:       "request above the server's limit",
		serverOpts: []grpc.ServerOption{grpc.MaxRecvMsgSize(1000), grpc.ForceServerCodecV2(serverCodec{}), grpc.UnknownServiceHandler(echoHandler)},
		msgSize:    5000,
		wantTooBig: true,
		wantText:   []string{"refused a request", "5000 bytes"},
	}, {
		name:       "quota",
		serverOpts: []grpc.ServerOption{grpc.ForceServerCodecV2(serverCodec{}), grpc.UnknownServiceHandler(quota)},
		msgSize:    10,
		wantTooBig: false,
		wantText:   []string{"quota exceeded"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var lis *countingListener
			if tc.serverOpts == nil {
				lis = startEchoServer(t)
			} else {
				lis = startServer(t, func(*grpc.Server) {}, tc.serverOpts...)
			}
			tr := build(t, grpctransport.NewBuilder(grpctransport.WithMaxRecvMsgSize(tc.recvLimit)), insecureConfig(lis.Addr().String()))
			err := recvAfterSend(t, tr, bytes.Repeat([]byte{'x'}, tc.msgSize))
			if got := errors.Is(err, transport.ErrMessageTooLarge); got != tc.wantTooBig {
				t.Fatalf("Recv error %v: errors.Is(ErrMessageTooLarge) = %v, want %v", err, got, tc.wantTooBig)
			}
			if err == nil {
				return
			}
			if code := status.Code(err); code != codes.ResourceExhausted {
				t.Errorf("Recv error %v: code %v, want ResourceExhausted", err, code)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Recv error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestRecv_LimitFromTheClient checks where a Transport's receive limit
// comes from, and that the error names the option that raises it:
// WithMaxRecvMsgSize of the Builder wins, then the client's
// (transport.BuildOptions.MaxRecvMsgSize, client.WithMaxRecvMsgSize), then
// DefaultMaxRecvMsgSize, which either raises.
func TestRecv_LimitFromTheClient(t *testing.T) {
	// The server answers each message with one of the size the message
	// names in its length: a small request gets a large response.
	sized := func(_ any, ss grpc.ServerStream) error {
		var msg []byte
		if err := ss.RecvMsg(&msg); err != nil {
			return err
		}
		if err := ss.SendMsg(bytes.Repeat([]byte{'x'}, len(msg)*1024)); err != nil {
			return err
		}
		return ss.RecvMsg(&msg) // open until the client ends the stream: no trailers
	}
	lis := startServer(t, func(*grpc.Server) {}, grpc.ForceServerCodecV2(serverCodec{}), grpc.UnknownServiceHandler(sized))
	for _, tc := range []struct {
		name     string
		own      int      // the Builder's WithMaxRecvMsgSize; 0: none
		client   int      // BuildOptions.MaxRecvMsgSize
		kib      int      // of the response
		wantText []string // nil: the response must arrive
		wantNot  string
	}{
		{"the client's limit", 0, 1024, 2, []string{"limit of 1024 bytes", "raise it with client.WithMaxRecvMsgSize)"}, "grpctransport."},
		{"the Builder's limit wins", 1024, 4096, 2, []string{"limit of 1024 bytes", "raise it with grpctransport.WithMaxRecvMsgSize)"}, "client."},
		{"the Builder's higher limit wins", 4096, 1024, 2, nil, ""},
		{"the default", 0, 0, grpctransport.DefaultMaxRecvMsgSize/1024 + 1, []string{"limit of 4194304 bytes", "client.WithMaxRecvMsgSize or grpctransport.WithMaxRecvMsgSize"}, ""},
		{"under the default", 0, 0, grpctransport.DefaultMaxRecvMsgSize / 1024, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []grpctransport.Option
			if tc.own > 0 {
				opts = append(opts, grpctransport.WithMaxRecvMsgSize(tc.own))
			}
			tr, err := grpctransport.NewBuilder(opts...).Dial(insecureConfig(lis.Addr().String()), transport.BuildOptions{MaxRecvMsgSize: tc.client})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tr.Close)
			err = recvAfterSend(t, tr, bytes.Repeat([]byte{'x'}, tc.kib))
			if tc.wantText == nil {
				if err != nil {
					t.Fatalf("Recv: %v, want the response", err)
				}
				return
			}
			if !errors.Is(err, transport.ErrMessageTooLarge) {
				t.Fatalf("Recv error %v, want one wrapping transport.ErrMessageTooLarge", err)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Recv error %q does not contain %q", err, w)
				}
			}
			if tc.wantNot != "" && strings.Contains(err.Error(), tc.wantNot) {
				t.Errorf("Recv error %q names %q, whose option would not change the limit", err, tc.wantNot)
			}
		})
	}
}
