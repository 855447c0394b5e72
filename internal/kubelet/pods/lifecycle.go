package pods

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/fsutil"
	"orch/internal/kubelet/podconfig"
)

// Upstream's bounds on termination messages.
const (
	maxTerminationMessage     = 4 * 1024 // read from the end of the file
	maxTerminationLogMessage  = 2 * 1024 // FallbackToLogsOnError: the log's tail
	maxTerminationLogMessageN = 80       // lines of it
)

// release forgets everything the workers keep of the pod with uid, whose
// containers and sandboxes are gone: back-offs, probes, volumes.
func (w *Workers) release(uid types.UID) error {
	w.forget(string(uid))
	w.probes.Remove(uid)
	w.keys.Delete(string(uid))
	return w.volumes.TearDown(uid)
}

// terminationLogFile makes the file mounted at c's terminationMessagePath
// for its next attempt, as upstream: <pod dir>/containers/<name>/<random>,
// mode 0666 so that any user in the container can write it.
func (w *Workers) terminationLogFile(pod *corev1.Pod, c *corev1.Container) (string, error) {
	if c.TerminationMessagePath == "" {
		return "", nil
	}
	dir := filepath.Join(w.volumes.PodDir(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("make the termination message file of container %q: %w", c.Name, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%08x", rand.Uint32()))
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return "", fmt.Errorf("make the termination message file of container %q: %w", c.Name, err)
	}
	return path, os.Chmod(path, 0o666)
}

// terminationMessage is what the exited container rs left as its
// termination message: the end of its termination message file, or, for
// FallbackToLogsOnError and a failure, the tail of its log.
func terminationMessage(rs *runtimeapi.ContainerStatus) string {
	path := rs.GetAnnotations()[podconfig.AnnotationTerminationMessagePath]
	fallback := corev1.TerminationMessagePolicy(rs.GetAnnotations()[podconfig.AnnotationTerminationMessagePolicy]) == corev1.TerminationMessageFallbackToLogsOnError &&
		rs.ExitCode != 0 && rs.Reason != "ContainerCannotRun"
	if path != "" {
		for _, m := range rs.GetMounts() {
			if m.ContainerPath != path {
				continue
			}
			data, err := readTail(m.HostPath, maxTerminationMessage)
			if err != nil && !os.IsNotExist(err) {
				return fmt.Sprintf("Error on reading termination log %s: %v", m.HostPath, err)
			}
			if len(data) > 0 || !fallback {
				return string(data)
			}
		}
	}
	if !fallback {
		return ""
	}
	data, err := readTail(rs.LogPath, 1<<20)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return logTail(data, maxTerminationLogMessageN, maxTerminationLogMessage)
}

// readTail reads at most n bytes from the end of the file at path.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// logTail is the output in the last lines of a CRI log (lines of
// "<time> <stream> <P|F> <text>", partial ones joined), at most maxBytes
// from its end.
func logTail(data []byte, lines, maxBytes int) string {
	var out []string
	var partial strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 4)
		if len(fields) < 3 {
			continue // a line cut off by readTail, or not CRI
		}
		text := ""
		if len(fields) == 4 {
			text = fields[3]
		}
		partial.WriteString(text)
		if fields[2] == "P" {
			continue
		}
		out = append(out, partial.String()+"\n")
		partial.Reset()
	}
	if partial.Len() > 0 { // output that ended without a newline
		out = append(out, partial.String())
	}
	if len(out) > lines {
		out = out[len(out)-lines:]
	}
	s := strings.Join(out, "")
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
	}
	return s
}

// writeEtcHosts writes the /etc/hosts of pod's containers, as upstream's
// kubelet manages it, at <pod dir>/etc-hosts, and returns its path. It is
// written once, as upstream's: containers bind-mount the file, so a
// rewrite would not reach running ones. A pod on the host's network gets
// the node's /etc/hosts with its host aliases.
func (w *Workers) writeEtcHosts(pod *corev1.Pod, podIPs []string) (string, error) {
	path := filepath.Join(w.volumes.PodDir(pod.UID), "etc-hosts")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	var content []byte
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile("/etc/hosts")
		if err != nil && !os.IsNotExist(err) {
			return "", fmt.Errorf("read the node's /etc/hosts: %w", err)
		}
		content = podconfig.EtcHostsHostNetwork(node, pod)
	} else {
		hostname, domain, err := podconfig.Hostname(pod, w.node.ClusterDomain)
		if err != nil {
			return "", err
		}
		content = podconfig.EtcHosts(pod, podIPs, hostname, domain)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return "", err
	}
	return path, fsutil.WriteFileAtomic(path, content, 0o644)
}

// evictOverSizeLimit evicts pod when one of its disk-backed emptyDir
// volumes outgrew its sizeLimit, as upstream's eviction manager does for
// local storage: the status (written to target) says Failed, reason
// Evicted, with upstream's message, and the next sync stops the sandbox
// at once (local storage evictions have no grace period).
func (w *Workers) evictOverSizeLimit(ctx context.Context, pod, target *corev1.Pod) (bool, error) {
	name, _, limit, over := w.volumes.OverSizeLimit(pod)
	if !over {
		return false, nil
	}
	msg := fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", name, resource.NewQuantity(limit, resource.BinarySI).String())
	w.recorder.Event(pod, corev1.EventTypeWarning, "Evicted", msg)
	updated := target.DeepCopy()
	updated.Status.Phase, updated.Status.Reason, updated.Status.Message = corev1.PodFailed, "Evicted", msg
	if _, err := w.client.CoreV1().Pods(target.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return true, fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return true, nil
}

// failPastDeadline fails a pod that has been active longer than its
// spec.activeDeadlineSeconds, as upstream's active deadline handler: the
// Failed phase with reason DeadlineExceeded is written to target, and the
// next sync stops the pod as finished. It reports whether it did.
func (w *Workers) failPastDeadline(ctx context.Context, pod, target *corev1.Pod) (bool, error) {
	if !pastActiveDeadline(pod, w.now()) {
		return false, nil
	}
	w.recorder.Event(pod, corev1.EventTypeNormal, reasonDeadlineExceeded, messageDeadlineExceeded)
	updated := target.DeepCopy()
	updated.Status.Phase, updated.Status.Reason, updated.Status.Message = corev1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
	if _, err := w.client.CoreV1().Pods(target.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return true, fmt.Errorf("fail pod %s/%s past its active deadline: %w", pod.Namespace, pod.Name, err)
	}
	return true, nil
}

// Upstream's reason and message of a pod past its active deadline.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// pastActiveDeadline is true once a started pod that is not finished has
// been active for its spec.activeDeadlineSeconds.
func pastActiveDeadline(pod *corev1.Pod, now time.Time) bool {
	d, start := pod.Spec.ActiveDeadlineSeconds, pod.Status.StartTime
	if d == nil || start == nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return now.Sub(start.Time) >= time.Duration(*d)*time.Second
}
