// SPDX-License-Identifier: Apache-2.0

// Package rpcretry retries gRPC RPCs from client interceptors, per RPC,
// with the semantics of gRPC's own retries (gRFC A6) for a retry policy
// of xDS (gRFC A44): for the RPCs whose policy a service config cannot
// express, because the routes of one method have different policies.
// Each attempt is a new RPC of the channel (so it is picked again, and
// grpc's transparent retries still apply to it); an RPC is retried only
// while no response headers came, with its status code in the policy,
// within its attempts, after a jittered exponential backoff or the
// server's pushback (grpc-retry-pushback-ms), and never after a pick
// failed with a status (a drop). Retries carry grpc-previous-rpc-attempts.
// Streams buffer what they send, up to grpc's retry buffer limit, to
// replay it.
package rpcretry

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/resources"
)

const (
	// maxAttempts caps an RPC's attempts, as gRFC A6 and A44 do.
	maxAttempts = 5
	// minBackoff is the shortest backoff (gRFC A44).
	minBackoff = time.Millisecond
	// multiplier is A44's backoffMultiplier.
	multiplier = 2
	// defaultBufferLimit is grpc's default retry buffer of an RPC
	// (grpc.MaxRetryRPCBufferSize).
	defaultBufferLimit = 256 * 1024

	pushbackKey         = "grpc-retry-pushback-ms"
	previousAttemptsKey = "grpc-previous-rpc-attempts"
)

// Policy is a retry policy as gRFC A44 converts an xDS RetryPolicy. It is
// immutable.
type Policy struct {
	codes          uint64 // bit c: code c is retried
	maxAttempts    int
	initialBackoff time.Duration
	maxBackoff     time.Duration
}

// NewPolicy returns the policy of p: its retry_on codes, num_retries + 1
// attempts (at most 5), its intervals (at least 1 ms) as initial and
// maximum backoff, multiplier 2. nil when p is nil or retries no code
// (A44: no retry policy).
func NewPolicy(p *resources.RetryPolicy) *Policy {
	if p == nil || len(p.RetryOn) == 0 {
		return nil
	}
	out := &Policy{
		maxAttempts:    int(min(uint64(p.NumRetries)+1, maxAttempts)),
		initialBackoff: max(p.BaseInterval, minBackoff),
		maxBackoff:     max(p.MaxInterval, minBackoff),
	}
	for _, c := range p.RetryOn {
		if c < 64 {
			out.codes |= 1 << c
		}
	}
	return out
}

func (p *Policy) retries(c codes.Code) bool { return c < 64 && p.codes&(1<<c) != 0 }

// call is the retry state of one RPC.
type call struct {
	p             *Policy
	ctx           context.Context // the RPC's
	attempts      int             // made so far
	sincePushback int             // retries since the last pushback
}

// attemptContext returns the context of the next attempt: the RPC's,
// with grpc-previous-rpc-attempts on retries.
func (c *call) attemptContext() context.Context {
	if c.attempts == 0 {
		return c.ctx
	}
	return metadata.AppendToOutgoingContext(c.ctx, previousAttemptsKey, strconv.Itoa(c.attempts))
}

// retry decides, after attempt c.attempts failed with err before any
// response header, whether to make another; trailer is the failed
// attempt's trailer metadata, dropped that its pick failed with a status.
// When it is to be retried, retry waits for the backoff and returns nil;
// otherwise it returns the error to end the RPC with (err, or the
// context's status if it ended while waiting).
func (c *call) retry(err error, trailer metadata.MD, dropped bool) error {
	if dropped || !c.p.retries(status.Code(err)) {
		return err
	}
	var wait time.Duration
	switch ps := trailer.Get(pushbackKey); {
	case len(ps) > 1:
		return err // gRFC A6: several values mean no retry
	case len(ps) == 1:
		ms, perr := strconv.Atoi(ps[0])
		if perr != nil || ms < 0 {
			return err // the server asks for no retry
		}
		wait, c.sincePushback = time.Duration(ms)*time.Millisecond, 0
	default:
		cur := math.Min(float64(c.p.initialBackoff)*math.Pow(multiplier, float64(c.sincePushback)), float64(c.p.maxBackoff))
		wait = time.Duration(rand.Int64N(int64(cur) + 1))
		c.sincePushback++
	}
	if c.attempts >= c.p.maxAttempts {
		return err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.ctx.Done():
		return status.FromContextError(c.ctx.Err()).Err()
	}
}

// Unary makes a unary RPC with invoke, one call per attempt, until an
// attempt succeeds or is not to be retried, and returns the last
// attempt's error. invoke is given the attempt's context and opts with
// the options the retries need; dropped, if not nil, reports whether the
// attempt just made failed in the picker with a status.
func (p *Policy) Unary(ctx context.Context, opts []grpc.CallOption, invoke func(ctx context.Context, opts []grpc.CallOption) error, dropped func() bool) error {
	c := &call{p: p, ctx: ctx}
	opts = opts[:len(opts):len(opts)]
	for {
		var header, trailer metadata.MD
		aopts := append(opts, grpc.Header(&header), grpc.Trailer(&trailer))
		actx := c.attemptContext()
		c.attempts++
		err := invoke(actx, aopts)
		if err == nil || header != nil {
			return err // succeeded, or committed by the response's headers
		}
		if rerr := c.retry(err, trailer, dropped != nil && dropped()); rerr != nil {
			return rerr
		}
	}
}

// bufferLimit returns the retry buffer limit of opts: the last
// grpc.MaxRetryRPCBufferSize, else grpc's default.
func bufferLimit(opts []grpc.CallOption) int {
	limit := defaultBufferLimit
	for _, o := range opts {
		if b, ok := o.(grpc.MaxRetryRPCBufferSizeCallOption); ok {
			limit = b.MaxRetryRPCBufferSize
		}
	}
	return limit
}
