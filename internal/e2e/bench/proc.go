package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one server process the driver started.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // path of its combined stdout and stderr
	done chan struct{}
	err  error
}

// startProc starts bin with args, its output going to logPath.
func startProc(name, logPath, bin string, args ...string) (*proc, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null")
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, and SIGKILL if the process is still there after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last n lines of the process's log, for error reports.
func (p *proc) tail(n int) string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitReadyz polls url+"/readyz" (anonymous, loopback, certificate not
// checked: only the answer matters) every 10ms until it answers 200, a process
// exits, or the timeout passes. It returns the time since start.
func waitReadyz(url string, start time.Time, timeout time.Duration, procs ...*proc) (time.Duration, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	deadline := start.Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := client.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		for _, p := range procs {
			if p.exited() {
				return 0, fmt.Errorf("%s exited before /readyz was ok (%v); last log lines:\n%s", p.name, p.err, p.tail(15))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s/readyz not ok after %s", url, timeout)
}

// Memory is a process's resident memory in bytes, from /proc/PID/status.
type Memory struct{ RSS, Anon, File int64 }

func (m Memory) add(o Memory) Memory {
	return Memory{m.RSS + o.RSS, m.Anon + o.Anon, m.File + o.File}
}

// ReadMemory reads VmRSS, RssAnon and RssFile (+RssShmem) of pid.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			m.RSS = kb * 1024
		case "RssAnon:":
			m.Anon = kb * 1024
		case "RssFile:", "RssShmem:":
			m.File += kb * 1024
		}
	}
	return m, sc.Err()
}

// memoryOf sums the memory of procs.
func memoryOf(procs []*proc) Memory {
	var total Memory
	for _, p := range procs {
		m, _ := ReadMemory(p.pid())
		total = total.add(m)
	}
	return total
}

// sampler records the peak memory of procs, sampled every 50ms until stopped.
type sampler struct {
	mu     sync.Mutex
	peak   Memory // each field is its own peak
	cancel context.CancelFunc
	done   chan struct{}
}

func startSampler(procs []*proc) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			m := memoryOf(procs)
			s.mu.Lock()
			s.peak = Memory{max(s.peak.RSS, m.RSS), max(s.peak.Anon, m.Anon), max(s.peak.File, m.File)}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends sampling and returns the peaks.
func (s *sampler) stop() Memory {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}
