package membercluster

import (
	"fmt"
	"testing"
	"time"
)

func TestRefreshDue(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, name := range []string{"eu-1", "us-7", "edge-4711"} {
		// Walk one renewal a minute and check against the rule: due exactly when a boundary
		// of the cluster's grid passed since the last record.
		prev := t0
		var gaps []time.Duration
		for m := 1; m <= 60; m++ {
			now := t0.Add(time.Duration(m) * time.Minute)
			if refreshDue(name, prev, now) {
				gaps = append(gaps, now.Sub(prev))
				prev = now
			}
		}
		if len(gaps) < 5 || len(gaps) > 6 {
			t.Errorf("%s: %d refreshes in 60 minutes, want one per 10 minutes", name, len(gaps))
		}
		for i, g := range gaps[1:] {
			if g != HeartbeatRecordInterval {
				t.Errorf("%s: refresh %d came %v after the one before, want %v", name, i+2, g, HeartbeatRecordInterval)
			}
		}
	}
	for _, tc := range []struct {
		name      string
		prev, now time.Duration // after t0
		want      bool
	}{
		{"same renewal", 0, 0, false},
		{"a full interval later, whatever the grid", 0, HeartbeatRecordInterval, true},
		{"an interval and more later", 3 * time.Minute, 3*time.Minute + HeartbeatRecordInterval + time.Second, true},
		{"going back in time", HeartbeatRecordInterval, 0, false},
	} {
		for _, name := range []string{"a", "b", "c", "d"} {
			if got := refreshDue(name, t0.Add(tc.prev), t0.Add(tc.now)); got != tc.want {
				t.Errorf("%s, cluster %s: refreshDue = %v, want %v", tc.name, name, got, tc.want)
			}
		}
	}
}

// Clusters that join together must not refresh together: 10,000 clusters joined within 5
// minutes, each re-checked every 5 minutes after its join (the heartbeat grace at 60 s
// heartbeats), refresh about 1,000 times a minute, not 2,000 in every other 5 minutes.
func TestRefreshesSpreadOverTheInterval(t *testing.T) {
	const clusters, grace = 10000, 5 * time.Minute
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	perMinute := map[int]int{}
	for i := range clusters {
		name := fmt.Sprintf("cluster-%05d", i)
		joined := t0.Add(time.Duration(i) * grace / clusters)
		prev := joined
		for now := joined.Add(grace); now.Before(t0.Add(2 * time.Hour)); now = now.Add(grace) {
			if refreshDue(name, prev, now) {
				if gap := now.Sub(prev); gap > HeartbeatRecordInterval+grace {
					t.Fatalf("%s: %v between refreshes, want at most %v", name, gap, HeartbeatRecordInterval+grace)
				}
				perMinute[int(now.Sub(t0)/time.Minute)]++
				prev = now
			}
		}
	}
	for m := 20; m < 110; m++ { // after the first interval, before the end
		if n := perMinute[m]; n < 700 || n > 1300 {
			t.Errorf("minute %d: %d refreshes, want about %d", m, n, clusters/int(HeartbeatRecordInterval/time.Minute))
		}
	}
}
