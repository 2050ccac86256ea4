package lab

import (
	"testing"

	"flotilla.dev/flotilla/internal/join"
)

func TestPlan(t *testing.T) {
	got := Plan(5)
	want := []struct{ name, env, ring string }{
		{"dev-eu-1", "dev", "0"}, {"staging-us-1", "staging", "1"}, {"prod-ap-1", "prod", "2"},
		{"prod-eu-1", "prod", "3"}, {"prod-us-1", "prod", "3"},
	}
	seen := map[string]bool{}
	for i, w := range want {
		m := got[i]
		if m.Name != w.name || m.Labels["env"] != w.env || m.Labels["flotilla.dev/ring"] != w.ring {
			t.Errorf("member %d = %s %v, want %s env=%s ring=%s", i, m.Name, m.Labels, w.name, w.env, w.ring)
		}
		if err := join.ValidateName(m.Name); err != nil {
			t.Error(err)
		}
		if _, err := join.ParseLabels(join.FormatLabels(m.Labels)); err != nil {
			t.Error(err)
		}
		if seen[m.Name] {
			t.Errorf("duplicate name %s", m.Name)
		}
		seen[m.Name] = true
	}
}
