package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/streamproxy"
)

// servePods answers the pods bound to this node as a v1 PodList.
func (s *Server) servePods(w http.ResponseWriter, r *http.Request) {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []corev1.Pod{}}
	for _, p := range s.cfg.Pods() {
		list.Items = append(list.Items, *p)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

// serveContainerLogs writes a container's log as upstream's kubelet does:
// errors about the request are JSON-ish 400/422s, a missing pod or
// container a 404, and a container without logs (waiting, no previous
// attempt) a 400 whose text the apiserver shows as is.
func (s *Server) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	opts, err := streamproxy.PodLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, `{"message": "Unable to decode query."}`, http.StatusBadRequest)
		return
	}
	if errs := streamproxy.ValidatePodLogOptions(opts); len(errs) > 0 {
		http.Error(w, `{"message": "Invalid request."}`, http.StatusUnprocessableEntity)
		return
	}
	pod, ok := s.findPod(ns, name)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		return
	}
	if pod != nil && !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
		return
	}
	ctx := r.Context()
	id, err := s.cfg.Containers.FindContainer(ctx, ns, name, container, opts.Previous)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, ErrNotFound) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	st, err := s.cfg.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		http.Error(w, fmt.Sprintf("failed to get container status %q: %v", id, err), http.StatusBadRequest)
		return
	}
	path := st.GetStatus().GetLogPath()
	if path == "" {
		http.Error(w, fmt.Sprintf("container %q in pod %q has no log file", container, name), http.StatusBadRequest)
		return
	}
	lo := &LogOptions{TailLines: opts.TailLines, LimitBytes: opts.LimitBytes, Follow: opts.Follow, Timestamps: opts.Timestamps}
	switch {
	case opts.SinceSeconds != nil:
		lo.Since = time.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	case opts.SinceTime != nil:
		lo.Since = opts.SinceTime.Time
	}
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	started := false
	start := func() {
		// Headers go out before the first line, as upstream's kubelet sends them.
		started = true
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		fw.rc.Flush()
	}
	if err := readLogs(ctx, s.log, path, id, lo, s.cfg.Runtime, fw, fw, start); err != nil {
		s.log.Debug("reading a container log failed", "pod", ns+"/"+name, "container", container, "err", err)
		if !started {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}
}

// flushWriter flushes after every write, so followed lines go out at once.
type flushWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil && len(p) > 0 {
		err = f.rc.Flush()
	}
	return n, err
}
