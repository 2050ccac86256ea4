// Package proc starts and stops the child processes of tests and the lab.
package proc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one child process of an environment.
type Process struct {
	Name    string
	Path    string
	Args    []string
	LogFile string
	Pid     int

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// spawner starts attached children from one goroutine locked to one OS thread that never
// exits. Linux delivers the parent-death signal when the *thread* that forked a child dies,
// so forking from an arbitrary goroutine's thread could kill children early; forking from a
// thread that lives as long as the process makes SIGKILL-on-exit reliable, even when a test
// panics or go test's timeout kills the binary.
var spawner = struct {
	once sync.Once
	reqs chan func()
}{reqs: make(chan func())}

func onSpawnerThread(f func()) {
	spawner.once.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives until the process ends
			for r := range spawner.reqs {
				r()
			}
		}()
	})
	done := make(chan struct{})
	spawner.reqs <- func() { f(); close(done) }
	<-done
}

// Start launches a process with its output in logFile. Attached processes get SIGKILL when
// this process ends; detached ones (the lab) get their own session and outlive it.
func Start(name, path string, args []string, logFile string, detached bool) (*Process, error) {
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	p := &Process{Name: name, Path: path, Args: args, LogFile: logFile, done: make(chan struct{})}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	onSpawnerThread(func() { err = cmd.Start() })
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.cmd, p.Pid = cmd, cmd.Process.Pid
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Exited reports whether the process has ended (only for processes this program started).
func (p *Process) Exited() bool {
	if p.done == nil {
		return !Alive(p.Pid)
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill stops the process hard and waits until it is gone. A SIGTERMed kube-apiserver can
// take a minute to drain, which no test should pay for.
func (p *Process) Kill() {
	if p == nil || p.Pid == 0 {
		return
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL) // its process group, if it leads one
	_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	if p.done != nil {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		return
	}
	WaitGone(p.Pid, 10*time.Second)
}

// Alive reports whether a process with this pid exists and is not a zombie.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// state is the field after the parenthesised command name
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// WaitGone waits until pid no longer runs.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !Alive(pid)
}

// tail returns the last lines of a log file, to put in an error message.
func Tail(file string, lines int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// freePorts reserves n distinct loopback ports by listening on them at once, then frees them.
func FreePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// WaitHTTP waits until url answers 200 OK, giving up when p exits, ctx ends or the timeout
// passes.
func WaitHTTP(ctx context.Context, url string, p *Process, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		last = err
		if p.Exited() {
			return fmt.Errorf("%s exited (%v)", p.Name, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy within %s: %v", p.Name, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
