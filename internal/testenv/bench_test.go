package testenv

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStartHubAndThreeMembers measures a warm start (binaries cached) of a hub and
// three members, each member with its kwok node Ready. Run:
//
//	go test ./internal/testenv -run XXX -bench StartHub -benchtime 3x
func BenchmarkStartHubAndThreeMembers(b *testing.B) {
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		env, err := Start(ctx, Options{Members: 3})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		env.Stop()
		b.StartTimer()
	}
}
