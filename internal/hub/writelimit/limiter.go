// Package writelimit adapts how many writes the hub has in flight to what its API server
// admits. The API server's priority and fairness answer 429 (Too Many Requests) when the
// hub's priority level is full, with a Retry-After of 1 s that doubles, up to 32 s, whenever
// the level dropped at least three times that many requests within that many seconds (and
// shrinks by one second at a time when it drops fewer: k8s.io/apiserver
// pkg/util/flowcontrol/dropped_requests_tracker.go); client-go waits it out and retries. A
// hub that kept all its writers going turns every 429 into more rejections and longer waits:
// 20 Works took 73 s behind a one-seat priority level (`flotilla bench throttle`). So every
// attempt of a write, client-go's retries included, takes a slot, and the number of slots is
// cut in half on every 429 and grows back by one per limit's worth of successful writes
// (additive increase, multiplicative decrease, as TCP does), returning to the maximum after a
// quiet period. It does not grow while the last 429's Retry-After runs: probing for a larger
// limit sooner only adds rejections, and enough of them push the API server's Retry-After up
// for every write. Reads and watches are not limited.
package writelimit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Quiet is how long without a 429 after which the limit returns to its maximum.
const Quiet = 30 * time.Second

// Limiter bounds concurrent writes. A nil Limiter admits everything.
//
// A status 5xx or a conflict is the API server working: it neither cuts nor grows the limit
// (Release(false) only does not count as a success).
type Limiter struct {
	max int
	now func() time.Time

	mu        sync.Mutex
	limit     int
	acked     int // successful writes since the limit last grew
	inflight  int
	throttled time.Time // the last 429
	holdUntil time.Time // the limit does not grow before this: the last 429's Retry-After
	wake      chan struct{}
	observe   func(limit int)
}

// New returns a Limiter of at most max writes in flight; observe, when not nil, is told
// every new limit (for a metric).
func New(max int, observe func(limit int)) *Limiter {
	l := &Limiter{max: max, now: time.Now, limit: max, wake: make(chan struct{}), observe: observe}
	l.report()
	return l
}

// Acquire waits until a write may start, or ctx ends.
func (l *Limiter) Acquire(ctx context.Context) error {
	if l == nil {
		return nil
	}
	for {
		l.mu.Lock()
		if !l.throttled.IsZero() && l.now().Sub(l.throttled) >= Quiet {
			l.limit, l.throttled, l.acked = l.max, time.Time{}, 0
			l.report()
		}
		if l.inflight < l.limit {
			l.inflight++
			l.mu.Unlock()
			return nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// Release ends a write; ok says whether it succeeded, which lets the limit grow.
func (l *Limiter) Release(ok bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if ok && l.limit < l.max && !l.now().Before(l.holdUntil) {
		if l.acked++; l.acked >= l.limit {
			l.limit, l.acked = l.limit+1, 0
			l.report()
		}
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// Throttled records a 429 from the API server: the limit halves, down to one, and does not
// grow again until retryAfter (what the API server asked to wait) has passed.
func (l *Limiter) Throttled(retryAfter time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.throttled = l.now()
	l.holdUntil = l.throttled.Add(retryAfter)
	l.acked = 0
	if l.limit > 1 {
		l.limit = max(1, l.limit/2)
		l.report()
	}
}

// Limit is how many writes may be in flight now.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

func (l *Limiter) report() {
	if l.observe != nil {
		l.observe(l.limit)
	}
}

// Wrap is a rest.Config WrapTransport: each attempt of a write holds a slot while it is
// sent, and a 429 cuts the limit. The slot is not held while client-go waits to retry.
func (l *Limiter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{rt: rt, l: l}
}

type roundTripper struct {
	rt http.RoundTripper
	l  *Limiter
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if !writes(req.Method) {
		return t.rt.RoundTrip(req)
	}
	if err := t.l.Acquire(req.Context()); err != nil {
		return nil, err
	}
	resp, err := t.rt.RoundTrip(req)
	throttled := err == nil && resp.StatusCode == http.StatusTooManyRequests
	if throttled {
		t.l.Throttled(retryAfter(resp.Header.Get("Retry-After")))
	}
	t.l.Release(err == nil && !throttled)
	return resp, err
}

// retryAfter reads a Retry-After header in seconds (what Kubernetes sends); one second when
// it is missing or not a number, the API server's smallest.
func retryAfter(h string) time.Duration {
	if n, err := strconv.Atoi(h); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return time.Second
}

func writes(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
