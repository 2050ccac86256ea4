package join

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAgentExecutable(t *testing.T) {
	tests := []struct {
		name  string
		agent os.FileMode // mode of a flotilla-agent file next to flotilla; 0: none
		small bool
	}{
		{name: "no flotilla-agent: the flotilla binary runs the agent"},
		{name: "executable flotilla-agent next to it", agent: 0o755, small: true},
		{name: "flotilla-agent not executable", agent: 0o644},
		{name: "flotilla-agent is a directory", agent: os.ModeDir | 0o755},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "flotilla")
			small := filepath.Join(dir, AgentExecutableName)
			switch {
			case tt.agent&os.ModeDir != 0:
				if err := os.Mkdir(small, 0o755); err != nil {
					t.Fatal(err)
				}
			case tt.agent != 0:
				if err := os.WriteFile(small, []byte("#!/bin/sh\n"), tt.agent); err != nil {
					t.Fatal(err)
				}
			}
			want := bin
			if tt.small {
				want = small
			}
			if got := AgentExecutable(bin); got != want {
				t.Errorf("AgentExecutable(%s) = %s, want %s", bin, got, want)
			}
		})
	}
}
