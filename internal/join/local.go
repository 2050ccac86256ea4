package join

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"flotilla.dev/flotilla/internal/proc"
)

// LocalAgent records an agent that `join --local` started as a process on this machine, so
// that `unjoin` and `lab down` can find it again.
type LocalAgent struct {
	Cluster          string    `json:"cluster"`
	Pid              int       `json:"pid"`
	Binary           string    `json:"binary,omitempty"`
	MemberKubeconfig string    `json:"memberKubeconfig"`
	LogFile          string    `json:"logFile"`
	Args             []string  `json:"args"`
	StartedAt        time.Time `json:"startedAt"`
}

// DefaultStateDir is where local agents are recorded: $FLOTILLA_STATE_DIR, else
// $XDG_STATE_HOME/flotilla, else ~/.local/state/flotilla.
func DefaultStateDir() string {
	if d := os.Getenv("FLOTILLA_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "flotilla")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "flotilla")
}

// AgentExecutableName is the small executable that runs only the agent (cmd/flotilla-agent).
const AgentExecutableName = "flotilla-agent"

// AgentExecutable returns the flotilla-agent executable next to the flotilla binary when
// there is one, else the binary itself: both run `agent`, but the small one keeps a member's
// always-running process at a third of the resident memory.
func AgentExecutable(flotillaBinary string) string {
	small := filepath.Join(filepath.Dir(flotillaBinary), AgentExecutableName)
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return small
	}
	return flotillaBinary
}

func agentDir(stateDir, cluster string) string { return filepath.Join(stateDir, "agents", cluster) }

// StartLocalAgent starts `BINARY agent ARGS...` in its own session, so it outlives the
// command that started it, and records it under stateDir.
func StartLocalAgent(stateDir, binary, cluster, memberKubeconfig string, args []string) (*LocalAgent, error) {
	dir := agentDir(stateDir, cluster)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if old, err := LoadLocalAgent(stateDir, cluster); err == nil && proc.Alive(old.Pid) {
		return nil, fmt.Errorf("a local agent for %s already runs (pid %d)", cluster, old.Pid)
	}
	la := &LocalAgent{Cluster: cluster, Binary: binary, MemberKubeconfig: memberKubeconfig, LogFile: filepath.Join(dir, "agent.log"),
		Args: append([]string{"agent", "--member-kubeconfig", memberKubeconfig}, args...), StartedAt: time.Now()}
	p, err := proc.Start("agent/"+cluster, binary, la.Args, la.LogFile, true)
	if err != nil {
		return nil, err
	}
	la.Pid = p.Pid
	return la, la.save(stateDir)
}

// RestartLocalAgent starts a recorded agent again with the same arguments.
func RestartLocalAgent(stateDir, binary, cluster string) (*LocalAgent, error) {
	la, err := LoadLocalAgent(stateDir, cluster)
	if err != nil {
		return nil, err
	}
	if proc.Alive(la.Pid) {
		return la, nil
	}
	p, err := proc.Start("agent/"+cluster, binary, la.Args, la.LogFile, true)
	if err != nil {
		return nil, err
	}
	la.Pid, la.Binary, la.StartedAt = p.Pid, binary, time.Now()
	return la, la.save(stateDir)
}

func (la *LocalAgent) save(stateDir string) error {
	b, err := json.MarshalIndent(la, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(agentDir(stateDir, la.Cluster), "agent.json"), b, 0o644)
}

// LoadLocalAgent reads the record of a local agent.
func LoadLocalAgent(stateDir, cluster string) (*LocalAgent, error) {
	b, err := os.ReadFile(filepath.Join(agentDir(stateDir, cluster), "agent.json"))
	if err != nil {
		return nil, err
	}
	la := &LocalAgent{}
	return la, json.Unmarshal(b, la)
}

// LocalAgents lists every recorded local agent.
func LocalAgents(stateDir string) ([]*LocalAgent, error) {
	files, _ := filepath.Glob(filepath.Join(stateDir, "agents", "*", "agent.json"))
	var out []*LocalAgent
	for _, f := range files {
		la, err := LoadLocalAgent(stateDir, filepath.Base(filepath.Dir(f)))
		if err != nil {
			return nil, err
		}
		out = append(out, la)
	}
	return out, nil
}

// StopLocalAgent stops a recorded local agent (SIGTERM, then SIGKILL after a few seconds).
// With forget, its record goes too.
func StopLocalAgent(stateDir, cluster string, forget bool) (stopped bool, err error) {
	la, err := LoadLocalAgent(stateDir, cluster)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if proc.Alive(la.Pid) {
		_ = syscall.Kill(la.Pid, syscall.SIGTERM)
		if !proc.WaitGone(la.Pid, 5*time.Second) {
			_ = syscall.Kill(la.Pid, syscall.SIGKILL)
			proc.WaitGone(la.Pid, 5*time.Second)
		}
		stopped = true
	}
	if forget {
		// Keep the log for post-mortems; drop the record.
		_ = os.Remove(filepath.Join(agentDir(stateDir, cluster), "agent.json"))
	}
	return stopped, nil
}
