package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"orch/internal/streamproxy"
)

func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	s.serveStream(w, r, streamproxy.Exec)
}

func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	s.serveStream(w, r, streamproxy.Attach)
}

// serveStream asks the runtime for an exec or attach session and proxies
// the client's upgrade to the URL it answers.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, kind streamproxy.Kind) {
	ns, name, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	opts := streamproxy.OptionsFrom(r.URL.Query())
	if opts.TTY && opts.Stderr {
		opts.Stderr = false // a terminal has no separate stderr (as upstream)
	}
	if !opts.Stdin && !opts.Stdout && !opts.Stderr {
		http.Error(w, "you must specify at least 1 of stdin, stdout, stderr", http.StatusBadRequest)
		return
	}
	if !s.podExists(w, r, ns, name) {
		return
	}
	ctx := r.Context()
	id, err := s.cfg.Containers.FindContainer(ctx, ns, name, container, false)
	if err != nil {
		writeError(w, err)
		return
	}
	var location string
	if kind == streamproxy.Exec {
		cmd := r.URL.Query()["command"]
		if len(cmd) == 0 {
			http.Error(w, "you must specify at least one command for the container", http.StatusBadRequest)
			return
		}
		resp, err := s.cfg.Runtime.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Tty: opts.TTY,
			Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr})
		if err != nil {
			writeError(w, err)
			return
		}
		location = resp.Url
	} else {
		resp, err := s.cfg.Runtime.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Tty: opts.TTY,
			Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr})
		if err != nil {
			writeError(w, err)
			return
		}
		location = resp.Url
	}
	s.proxy(w, r, kind, location, opts)
}

// servePortForward asks the runtime to forward the pod's ports and proxies
// the client's upgrade to the URL it answers.
func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("pod")
	var ports []int32
	if wsstream.IsWebSocketRequest(r) && !wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		var err error
		if ports, err = queryPorts(r.URL.Query()); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	if !s.podExists(w, r, ns, name) {
		return
	}
	ctx := r.Context()
	sandbox, err := s.cfg.Containers.FindSandbox(ctx, ns, name)
	if err != nil {
		writeError(w, err)
		return
	}
	resp, err := s.cfg.Runtime.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: ports})
	if err != nil {
		writeError(w, err)
		return
	}
	s.proxy(w, r, streamproxy.PortForward, resp.Url, streamproxy.Options{})
}

// podExists answers 404 unless the pod (and, given in the path, its UID)
// is one of this node's.
func (s *Server) podExists(w http.ResponseWriter, r *http.Request, ns, name string) bool {
	pod, ok := s.findPod(ns, name)
	if !ok || (pod != nil && r.PathValue("uid") != "" && string(pod.UID) != r.PathValue("uid")) {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return false
	}
	return true
}

func (s *Server) proxy(w http.ResponseWriter, r *http.Request, kind streamproxy.Kind, location string, opts streamproxy.Options) {
	u, err := url.Parse(location)
	if err != nil || !u.IsAbs() {
		http.Error(w, fmt.Sprintf("the runtime answered a streaming URL that is not absolute: %q", location), http.StatusInternalServerError)
		return
	}
	streamproxy.Handler(kind, streamproxy.Backend{Location: u, Log: s.log}, opts).ServeHTTP(w, r)
}

// queryPorts reads the port parameters of a WebSocket port-forward.
func queryPorts(q url.Values) ([]int32, error) {
	values := q["port"]
	if len(values) == 0 {
		return nil, errors.New(`query parameter "port" is required`)
	}
	var ports []int32
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			port, err := strconv.ParseUint(p, 10, 16)
			if err != nil || port < 1 {
				return nil, fmt.Errorf("unable to parse %q as a port", v)
			}
			ports = append(ports, int32(port))
		}
	}
	return ports, nil
}

// writeError maps finder and runtime errors to HTTP as upstream's
// streaming server does with gRPC codes.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound) || status.Code(err) == codes.NotFound:
		code = http.StatusNotFound
	case status.Code(err) == codes.ResourceExhausted:
		code = http.StatusTooManyRequests
	case status.Code(err) == codes.InvalidArgument || status.Code(err) == codes.FailedPrecondition:
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}
