package writelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestLimitAdapts(t *testing.T) {
	clock := time.Unix(0, 0)
	var seen []int
	l := New(32, func(n int) { seen = append(seen, n) })
	l.now = func() time.Time { return clock }
	cut := func() { l.Throttled(0) }
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"starts at the maximum", func() {}, 32},
		{"a 429 halves it", cut, 16},
		{"four more reach one", func() { cut(); cut(); cut(); cut() }, 1},
		{"never below one", cut, 1},
		{"a failed write does not grow it", func() { l.inflight++; l.Release(false) }, 1},
		{"one success at limit 1 adds one", func() { l.inflight++; l.Release(true) }, 2},
		{"two successes at limit 2 add one", func() { l.inflight += 2; l.Release(true); l.Release(true) }, 3},
		{"a 429 asking to retry after 2 s halves it", func() { l.Throttled(2 * time.Second) }, 1},
		{"no growth while that Retry-After runs", func() { clock = clock.Add(time.Second); l.inflight++; l.Release(true) }, 1},
		{"growth again once it has passed", func() { clock = clock.Add(time.Second); l.inflight++; l.Release(true) }, 2},
		{"back to the maximum after a quiet period", func() {
			clock = clock.Add(Quiet)
			if err := l.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			l.Release(true)
		}, 32},
		{"never above the maximum", func() { l.inflight++; l.Release(true) }, 32},
	}
	for _, s := range steps {
		s.do()
		if got := l.Limit(); got != s.want {
			t.Fatalf("%s: limit %d, want %d", s.name, got, s.want)
		}
	}
	if want := []int{32, 16, 8, 4, 2, 1, 2, 3, 1, 2, 32}; len(seen) != len(want) {
		t.Fatalf("observed limits %v, want %v", seen, want)
	}
}

func TestAcquireWaitsForASlot(t *testing.T) {
	l := New(2, nil)
	l.Throttled(0) // limit 1
	ctx := context.Background()
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() { got <- l.Acquire(ctx) }()
	select {
	case <-got:
		t.Fatal("a second write started while the limit is one")
	case <-time.After(50 * time.Millisecond):
	}
	l.Release(true)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	l.Throttled(0) // limit 1 again, and the second write holds it
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.Acquire(cancelled); err == nil {
		t.Fatal("Acquire went ahead of the limit on an ended context")
	}
	var nilLimiter *Limiter
	if err := nilLimiter.Acquire(ctx); err != nil {
		t.Fatal("a nil Limiter must admit everything")
	}
	nilLimiter.Release(true)
	nilLimiter.Throttled(time.Second)
}

func TestTransportCutsOnTooManyRequests(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "4")
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	l := New(8, nil)
	c := &http.Client{Transport: l.Wrap(http.DefaultTransport)}
	for _, tc := range []struct {
		status int
		want   int
	}{{http.StatusOK, 8}, {http.StatusConflict, 8}, {http.StatusTooManyRequests, 4}, {http.StatusTooManyRequests, 2}} {
		status = tc.status
		resp, err := c.Post(srv.URL, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := l.Limit(); got != tc.want {
			t.Fatalf("after a %d: limit %d, want %d", tc.status, got, tc.want)
		}
	}
	if hold := l.holdUntil.Sub(l.throttled); hold != 4*time.Second {
		t.Fatalf("after a 429 with Retry-After 4: no growth for %v, want 4s", hold)
	}
	// Reads are neither limited nor counted.
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := l.Limit(); got != 2 {
		t.Fatalf("after a read answered 429: limit %d, want 2", got)
	}
}

// While the limit is one, a second write waits for the first to end: the slot is held for
// the attempt only.
func TestTransportHoldsASlotPerAttempt(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer srv.Close()
	l := New(2, nil)
	l.Throttled(0)
	c := &http.Client{Transport: l.Wrap(http.DefaultTransport)}
	done := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := c.Post(srv.URL, "application/json", nil)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	<-arrived
	select {
	case <-arrived:
		t.Fatal("two writes reached the server while the limit is one")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{{"", time.Second}, {"1", time.Second}, {"32", 32 * time.Second}, {"0", time.Second}, {"-3", time.Second},
		{"Fri, 04 Dec 2026 14:00:00 GMT", time.Second}} {
		if got := retryAfter(tc.header); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
