package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Proc is one process whose footprint is measured.
type Proc struct {
	Role string
	Pid  int
}

// usage is a process's resident memory and the CPU time it used so far, from /proc.
type usage struct {
	RSS uint64 // bytes
	// Anon is the private part of RSS (heap, stacks); the rest is file-backed pages, mostly
	// the executable's, which the page cache shares and can reclaim.
	Anon uint64
	CPU  time.Duration
	At   time.Time
}

// clockTick is USER_HZ: 100 on every Linux this runs on.
const clockTick = 100

func readUsage(pid int) (usage, error) {
	u := usage{At: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 22 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	u.CPU = time.Duration(utime+stime) * time.Second / clockTick
	rss, _ := strconv.ParseUint(f[21], 10, 64)
	u.RSS = rss * uint64(os.Getpagesize())
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				u.Anon = kb * 1024
			}
		}
	}
	return u, nil
}

// cpuBetween is the CPU used between two samples, in millicores.
func cpuBetween(a, b usage) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	return float64(b.CPU-a.CPU) / float64(wall) * 1000
}

// sampleRSS records the peak resident memory of pid until stop is closed.
func samplePeak(pid int, every time.Duration, stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if u, err := readUsage(pid); err == nil && u.RSS > peak {
				peak = u.RSS
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}
