package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// kubectlTimeout bounds one kubectl run.
const kubectlTimeout = 90 * time.Second

// Result is what a finished command printed and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Cmd is a kubectl invocation: arguments, optional stdin and extra
// environment ("K=V").
type Cmd struct {
	Args  []string
	Stdin string
	Env   []string
}

// kubectlEnv points kubectl at this server and at a discovery cache of its
// own (not root's ~/.kube), with no editor from the caller's environment.
func (s *Server) kubectlEnv(extra []string) []string {
	env := append(os.Environ(), "KUBECONFIG="+s.Kubeconfig, "KUBECACHEDIR="+filepath.Join(s.Dir, "kubecache"),
		"KUBE_EDITOR=", "EDITOR=false")
	return append(env, extra...)
}

// Run runs `orch kubectl ARGS...` to completion.
func (s *Server) Run(t testing.TB, c Cmd) Result {
	t.Helper()
	return runTool(t, "orch", orchBin, append([]string{"kubectl"}, c.Args...), s.kubectlEnv(c.Env), c.Stdin)
}

// runTool runs bin with args, env and stdin to completion (within
// kubectlTimeout); it fails the test only when bin cannot run or times out.
func runTool(t testing.TB, name, bin string, args, env []string, stdin string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		res.Code = exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, res.Stdout, res.Stderr)
	}
	return res
}

// succeeded fails the test unless r exited 0; it returns r's stdout.
func succeeded(t testing.TB, what string, r Result) string {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", what, r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// Kubectl runs kubectl and fails the test unless it exits 0; it returns stdout.
func (s *Server) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	return succeeded(t, "kubectl "+strings.Join(args, " "), s.Run(t, Cmd{Args: args}))
}

// KubectlIn is Kubectl with stdin.
func (s *Server) KubectlIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	return succeeded(t, "kubectl "+strings.Join(args, " "), s.Run(t, Cmd{Args: args, Stdin: stdin}))
}

// Background is a kubectl that keeps running (get -w), its output captured.
type Background struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{}
	exited error
}

func (b *Background) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.Write(p)
}

// Output is everything it printed so far (stdout and stderr).
func (b *Background) Output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// StartKubectl starts kubectl in the background; it is killed when t ends.
func (s *Server) StartKubectl(t *testing.T, args ...string) *Background {
	t.Helper()
	b := &Background{done: make(chan struct{})}
	b.cmd = exec.Command(orchBin, append([]string{"kubectl"}, args...)...)
	b.cmd.Env = s.kubectlEnv(nil)
	b.cmd.Stdout, b.cmd.Stderr = b, b
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		b.exited = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(b.Stop)
	return b
}

// Stop kills it and waits for it to exit.
func (b *Background) Stop() {
	select {
	case <-b.done:
	default:
		b.cmd.Process.Kill()
		<-b.done
	}
}

// WaitFor polls until cond(output) returns "" (or fails with what cond said).
func (b *Background) WaitFor(t *testing.T, timeout time.Duration, cond func(out string) string) {
	t.Helper()
	eventually(t, timeout, func() string {
		msg := cond(b.Output())
		if msg != "" {
			select {
			case <-b.done:
				return msg + " (kubectl exited: " + errString(b.exited) + ")\n" + b.Output()
			default:
			}
		}
		return msg
	})
}

func errString(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}
