package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"k8s.io/streaming/pkg/httpstream/wsstream"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"orch/internal/streamproxy"
)

// isProxiedSubresource is true for the subresources served by a node:
// pods/log, exec, attach, portforward and proxy; nodes/proxy; services/proxy.
func isProxiedSubresource(resource, sub string) bool {
	switch resource {
	case "pods":
		return isStreamingSubresource(sub)
	case "nodes", "services":
		return sub == "proxy"
	}
	return false
}

// serveProxied serves a subresource isProxiedSubresource accepts.
func (s *Server) serveProxied(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	gr := schema.GroupResource{Resource: rs.res.Resource + "/" + info.Subresource}
	fail := func(err error) { s.respondError(w, r, err, gr, info.Name) }
	switch {
	case rs.res.Resource == "pods" && info.Subresource == "log":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			fail(apierrors.NewMethodNotSupported(gr, info.Verb))
			return
		}
		s.servePodLog(w, r, info, rs)
	case rs.res.Resource == "pods" && (info.Subresource == "exec" || info.Subresource == "attach" || info.Subresource == "portforward"):
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			fail(apierrors.NewMethodNotSupported(gr, info.Verb))
			return
		}
		if err := s.admitConnect(r, info, rs); err != nil {
			fail(err)
			return
		}
		s.servePodStream(w, r, info, rs)
	default:
		if err := s.admitConnect(r, info, rs); err != nil {
			fail(err)
			return
		}
		s.serveProxy(w, r, info, rs)
	}
}

// connectOptions is the object admission sees for a connect subresource:
// its options, read from the query as upstream's handlers read them.
func connectOptions(r *http.Request, info requestInfo, resource string) runtime.Object {
	q := r.URL.Query()
	switch resource + "/" + info.Subresource {
	case "pods/exec":
		o := streamproxy.OptionsFrom(q)
		return &corev1.PodExecOptions{Container: q.Get("container"), Command: q["command"],
			Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY}
	case "pods/attach":
		o := streamproxy.OptionsFrom(q)
		return &corev1.PodAttachOptions{Container: q.Get("container"), Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY}
	case "pods/portforward":
		opts := &corev1.PodPortForwardOptions{}
		for _, list := range q["ports"] {
			for _, p := range strings.Split(list, ",") {
				if port, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32); err == nil {
					opts.Ports = append(opts.Ports, int32(port))
				}
			}
		}
		return opts
	case "pods/proxy":
		return &corev1.PodProxyOptions{Path: proxyPath(r, info)}
	case "services/proxy":
		return &corev1.ServiceProxyOptions{Path: proxyPath(r, info)}
	case "nodes/proxy":
		return &corev1.NodeProxyOptions{Path: proxyPath(r, info)}
	}
	return nil
}

// admitConnect runs admission policies and webhooks on a CONNECT: the
// object is the subresource's options, read from the query.
func (s *Server) admitConnect(r *http.Request, info requestInfo, rs *resourceStore) error {
	opts := connectOptions(r, info, rs.res.Resource)
	if opts == nil {
		return nil
	}
	kind := corev1.SchemeGroupVersion.WithKind(reflect.TypeOf(opts).Elem().Name())
	opts.GetObjectKind().SetGroupVersionKind(kind)
	adm := admissionRequest{rs: rs, kind: kind, op: admission.Connect, subresource: info.Subresource, obj: opts,
		namespace: info.Namespace, name: info.Name}
	return s.admitExt(r.Context(), adm)
}

func (s *Server) getPod(r *http.Request, info requestInfo, rs *resourceStore) (*corev1.Pod, error) {
	obj, err := rs.get(r.Context(), info.Namespace, info.Name)
	if isNotFound(err) {
		return nil, apierrors.NewNotFound(rs.gr, info.Name)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// validateContainer defaults the container of a pod with one and checks a
// named one, with upstream's errors.
func validateContainer(container string, pod *corev1.Pod) (string, error) {
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		var names []string
		for _, c := range allContainers(pod) {
			names = append(names, c)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
	}
	for _, c := range allContainers(pod) {
		if c == container {
			return container, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

// allContainers names the init, regular and ephemeral containers, in the
// order upstream visits them.
func allContainers(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}

// servePodLog is pods/log: the kubelet's containerLogs, streamed back as
// text/plain (flushed line by line when following).
func (s *Server) servePodLog(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	gr := schema.GroupResource{Resource: "pods/log"}
	fail := func(err error) { s.respondError(w, r, err, gr, info.Name) }
	opts, err := streamproxy.PodLogOptions(r.URL.Query())
	if err != nil {
		fail(apierrors.NewBadRequest(err.Error()))
		return
	}
	if errs := streamproxy.ValidatePodLogOptions(opts); len(errs) > 0 {
		fail(apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, info.Name, errs))
		return
	}
	pod, err := s.getPod(r, info, rs)
	if err != nil {
		fail(err)
		return
	}
	container, err := validateContainer(opts.Container, pod)
	if err != nil {
		fail(err)
		return
	}
	if pod.Spec.NodeName == "" {
		// Not scheduled: no logs yet, an empty answer as upstream gives.
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		return
	}
	q := url.Values{}
	setTrue := func(name string, v bool) {
		if v {
			q.Set(name, "true")
		}
	}
	setTrue("follow", opts.Follow)
	setTrue("previous", opts.Previous)
	setTrue("timestamps", opts.Timestamps)
	for name, v := range map[string]*int64{"sinceSeconds": opts.SinceSeconds, "tailLines": opts.TailLines, "limitBytes": opts.LimitBytes} {
		if v != nil {
			q.Set(name, strconv.FormatInt(*v, 10))
		}
	}
	if opts.SinceTime != nil {
		q.Set("sinceTime", opts.SinceTime.UTC().Format(time.RFC3339))
	}
	loc, err := s.kubeletLocation(r.Context(), pod.Spec.NodeName, fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container), q)
	if err != nil {
		fail(err)
		return
	}
	s.cfg.KubeletClient.init()
	transport := s.cfg.KubeletClient.transport
	if opts.InsecureSkipTLSVerifyBackend {
		transport = s.cfg.KubeletClient.insecure
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, loc.String(), nil)
	if err != nil {
		fail(err)
		return
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		fail(apierrors.NewInternalError(fmt.Errorf("get logs from the kubelet of node %q: %w", pod.Spec.NodeName, err)))
		return
	}
	defer resp.Body.Close()
	if err := checkKubeletResponse(resp, gr, info.Name); err != nil {
		fail(err)
		return
	}
	if wsstream.IsWebSocketRequest(r) {
		// Over a WebSocket (upstream's binary.k8s.io and base64.binary.k8s.io
		// protocols): each read of the log becomes a message, with pings to
		// keep the connection open while following.
		if err := wsstream.NewReader(resp.Body, true, wsstream.NewDefaultReaderProtocols()).Copy(w, r); err != nil {
			s.log.Debug("pods/log over a websocket", "pod", info.Name, "err", err)
		}
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	copyFlushing(w, resp.Body, opts.Follow)
}

// checkKubeletResponse turns a kubelet's error answer into the status
// upstream's response checker makes of it.
func checkKubeletResponse(resp *http.Response, gr schema.GroupResource, name string) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 206 {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 50000))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	text := string(body)
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(fmt.Errorf("%s", text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", gr, name, text, 0, false)
}

// copyFlushing copies the body to w, flushing after each read when flush is set.
func copyFlushing(w http.ResponseWriter, body io.Reader, flush bool) {
	if !flush {
		io.Copy(w, body)
		return
	}
	rc := http.NewResponseController(w)
	rc.Flush() // the client sees the headers before the first line
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// servePodStream is pods/exec, attach and portforward: the request goes
// to the kubelet, WebSocket v5 translated to SPDY and WebSocket
// port-forward tunnelled (see streamproxy).
func (s *Server) servePodStream(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	gr := schema.GroupResource{Resource: "pods/" + info.Subresource}
	fail := func(err error) { s.respondError(w, r, err, gr, info.Name) }
	pod, err := s.getPod(r, info, rs)
	if err != nil {
		fail(err)
		return
	}
	query := r.URL.Query()
	q := url.Values{}
	kind := streamproxy.Kind(info.Subresource)
	opts := streamproxy.OptionsFrom(query)
	var path string
	if kind == streamproxy.PortForward {
		if ports := query["ports"]; len(ports) > 0 {
			q.Set("port", strings.Join(ports, ","))
		}
		path = fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name)
	} else {
		container, err := validateContainer(query.Get("container"), pod)
		if err != nil {
			fail(err)
			return
		}
		for name, v := range map[string]bool{"stdin": opts.Stdin, "stdout": opts.Stdout, "stderr": opts.Stderr, "tty": opts.TTY} {
			if v {
				q.Set(name, "1")
			}
		}
		if kind == streamproxy.Exec {
			q["command"] = query["command"]
		}
		path = fmt.Sprintf("/%s/%s/%s/%s", kind, pod.Namespace, pod.Name, container)
	}
	if pod.Spec.NodeName == "" {
		fail(apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name)))
		return
	}
	loc, err := s.kubeletLocation(r.Context(), pod.Spec.NodeName, path, q)
	if err != nil {
		fail(err)
		return
	}
	stripCredentials(r)
	streamproxy.Handler(kind, s.kubeletBackend(loc), opts).ServeHTTP(w, r)
}

// stripCredentials removes what authenticated the user to the apiserver:
// the kubelet sees the apiserver's client certificate only.
func stripCredentials(r *http.Request) {
	r.Header.Del("Authorization")
	for k := range r.Header {
		if strings.HasPrefix(k, "Impersonate-") {
			r.Header.Del(k)
		}
	}
}
