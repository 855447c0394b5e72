package join

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ServersFile (in data-dir/agent) remembers the servers an agent learned,
// so that it finds the cluster after a restart while --server is down.
const ServersFile = "servers"

// serverDialTimeout bounds one attempt to reach one server: a server
// that is gone costs at most this before the next one is tried.
const serverDialTimeout = 5 * time.Second

// Servers is an agent's client-side load balancer over the cluster's
// servers: every connection to the apiserver goes to the server that
// answered last, or to the next one that answers. The list is --server
// plus the addresses of the default/kubernetes Endpoints (FollowServers),
// so an agent rides through the loss of any one server.
type Servers struct {
	first string // --server's host:port, always kept
	file  string
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	log   *slog.Logger

	mu    sync.Mutex
	addrs []string
	good  string
}

func newServers(first, file string, log *slog.Logger) *Servers {
	if _, _, err := net.SplitHostPort(first); err != nil {
		first = net.JoinHostPort(first, "443") // https://HOST means port 443
	}
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	s := &Servers{first: first, file: file, dial: d.DialContext, log: log, addrs: []string{first}, good: first}
	if data, err := os.ReadFile(file); err == nil {
		s.addrs = mergeServers(first, strings.Fields(string(data)))
	}
	return s
}

// mergeServers is first followed by the others, without duplicates.
func mergeServers(first string, others []string) []string {
	out := []string{first}
	for _, a := range others {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Addresses returns the servers in the order they are tried.
func (s *Servers) Addresses() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{s.good}
	for _, a := range s.addrs {
		if a != s.good {
			out = append(out, a)
		}
	}
	return out
}

// Set replaces the learned servers (host:port) and remembers them.
func (s *Servers) Set(addrs []string) {
	merged := mergeServers(s.first, addrs)
	s.mu.Lock()
	changed := !slices.Equal(merged, s.addrs)
	s.addrs = merged
	if !slices.Contains(merged, s.good) {
		s.good = s.first
	}
	s.mu.Unlock()
	if !changed {
		return
	}
	s.log.Info("the cluster's servers", "servers", merged)
	if err := os.WriteFile(s.file, []byte(strings.Join(merged, "\n")+"\n"), 0o600); err != nil {
		s.log.Warn("cannot remember the cluster's servers", "file", s.file, "err", err)
	}
}

// DialContext connects to the first server that answers, whatever addr is.
func (s *Servers) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var errs []error
	for _, addr := range s.Addresses() {
		attempt, cancel := context.WithTimeout(ctx, serverDialTimeout)
		conn, err := s.dial(attempt, network, addr)
		cancel()
		if err == nil {
			s.mu.Lock()
			if s.good != addr {
				s.log.Info("connected to another server", "server", addr, "previous", s.good)
				s.good = addr
			}
			s.mu.Unlock()
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("no orch server answers: %w", errors.Join(errs...))
}

// FollowServers keeps the list in step with the default/kubernetes
// Endpoints (one address per running server) until ctx ends.
func (s *Servers) FollowServers(ctx context.Context, client kubernetes.Interface) error {
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "endpoints", "default",
		fields.OneTermEqualSelector("metadata.name", "kubernetes"))
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Endpoints{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.fromEndpoints(obj) },
			UpdateFunc: func(_, obj any) { s.fromEndpoints(obj) },
		},
	})
	informer.RunWithContext(ctx)
	return nil
}

func (s *Servers) fromEndpoints(obj any) {
	ep, ok := obj.(*corev1.Endpoints)
	if !ok {
		return
	}
	var addrs []string
	for _, subset := range ep.Subsets {
		for _, port := range subset.Ports {
			if port.Name != "https" {
				continue
			}
			for _, a := range subset.Addresses {
				addrs = append(addrs, net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
			}
		}
	}
	if len(addrs) > 0 {
		s.Set(addrs)
	}
}

func serversFile(p paths) string { return filepath.Join(p.agent, ServersFile) }
