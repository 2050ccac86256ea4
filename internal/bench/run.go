package bench

import (
	"context"
	"fmt"
	"slices"
)

// Run runs the asked scenarios at every fleet size (a fresh hub for each size, so that
// memory figures start from an empty hub), then the agent scenario once. A failing step
// stops the run; the report holds what was measured before it.
func Run(ctx context.Context, o FleetOptions, sizes []int) (*Report, error) {
	o.defaults()
	for _, s := range o.Scenarios {
		if !slices.Contains(Scenarios, s) {
			return nil, fmt.Errorf("unknown scenario %q (scenarios: %v)", s, Scenarios)
		}
	}
	all := len(o.Scenarios) == 0
	fleetWanted := all || slices.ContainsFunc(o.Scenarios, func(s string) bool { return s != ScenarioAgent })
	rep := &Report{Machine: machine()}
	if fleetWanted {
		for _, n := range sizes {
			if n < 3 {
				return rep, fmt.Errorf("--clusters %d: at least 3 clusters (the rollout has a wave per region of 3)", n)
			}
			fo := o
			fo.Clusters = n
			rs, err := RunFleet(ctx, fo)
			rep.Results = append(rep.Results, rs...)
			if err != nil {
				return rep, fmt.Errorf("%d clusters: %w", n, err)
			}
		}
	}
	if all || slices.Contains(o.Scenarios, ScenarioAgent) {
		r, err := RunAgent(ctx, o.Options, o.IdleFor)
		if len(r.Metrics) > 0 {
			rep.Results = append(rep.Results, r)
		}
		if err != nil {
			return rep, fmt.Errorf("agent: %w", err)
		}
	}
	return rep, nil
}
