package pods

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/kubelet/prober"
)

// hookTimeout bounds a postStart hook (upstream gives exec hooks no
// timeout; an HTTP hook has 10 s).
const hookTimeout = 2 * time.Minute

// runHook runs a postStart or preStop handler of container c (runtime
// ID id) of pod, as upstream's handlerRunner: exec in the container
// (failing on a non-zero exit), an HTTP GET (failing only when no answer
// comes), or a sleep. It returns upstream's message on failure.
func (w *Workers) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		stdout, stderr, code, err := w.exec.ExecSync(ctx, id, h.Exec.Command, hookTimeout)
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), code, stderr)
		}
		if err != nil {
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, formatPod(pod), err, string(stdout)+string(stderr))
		}
	case h.HTTPGet != nil:
		if err := httpHook(ctx, c, h.HTTPGet, podIP); err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, formatPod(pod), err)
		}
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		case <-ctx.Done():
		}
	default:
		return fmt.Errorf("Cannot run handler: invalid handler: %v", h)
	}
	return nil
}

// httpHook GETs the hook's URL; any answer is success, as upstream.
func httpHook(ctx context.Context, c *corev1.Container, get *corev1.HTTPGetAction, podIP string) error {
	host := get.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return fmt.Errorf("the pod has no IP yet")
	}
	port, err := prober.ResolvePort(get.Port, c)
	if err != nil {
		return err
	}
	scheme := "http"
	if get.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: get.Path}
	if parsed, err := url.Parse(get.Path); err == nil {
		u.Path, u.RawQuery = parsed.Path, parsed.RawQuery
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "kube-lifecycle/1.37")
	req.Header.Set("Accept", "*/*")
	for _, h := range get.HTTPHeaders {
		if h.Name == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 10*1024))
	return resp.Body.Close()
}
