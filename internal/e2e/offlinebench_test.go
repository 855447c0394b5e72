package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/images"
	"orch/internal/localstore"
)

// BenchmarkOfflineStart measures the agent's local store on a node with
// 30 pods (each with a Secret volume and a ConfigMap's environment): the
// store's size, the time from `orch agent` starting after a "reboot" with
// the server stopped to all 30 containers running again, and, once the
// server is back, the time from its readiness to the node's Lease renewed
// and every pod Running and Ready in the API with the status of its new
// container. Run with -benchtime 1x (make bench).
func BenchmarkOfflineStart(b *testing.B) {
	const n = 30
	s := StartServer(b)
	a := StartAgent(b, s, "bench-offline")
	client := s.client(b)
	waitNodeReady(b, client, "bench-offline")
	var y strings.Builder
	y.WriteString("apiVersion: v1\nkind: Secret\nmetadata: {name: app}\nstringData: {key: value}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {MODE: bench}\n")
	for i := range n {
		fmt.Fprintf(&y, `---
apiVersion: v1
kind: Pod
metadata: {name: app-%d, labels: {app: bench}}
spec:
  nodeName: bench-offline
  containers:
  - {name: app, image: %s, imagePullPolicy: Never, command: [sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"],
     envFrom: [{configMapRef: {name: app}}], volumeMounts: [{name: s, mountPath: /s}]}
  volumes: [{name: s, secret: {secretName: app}}]
`, i, images.BusyboxRef)
	}
	s.KubectlIn(b, y.String(), "apply", "-f", "-")
	allUp := func() string {
		pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=bench"})
		if err != nil {
			return err.Error()
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodRunning {
					ready++
				}
			}
		}
		if ready != n {
			return fmt.Sprintf("%d of %d pods running and ready", ready, n)
		}
		return ""
	}
	eventually(b, 3*time.Minute, allUp)
	for range b.N {
		s.Stop()
		a.Stop()
		fi, err := os.Stat(filepath.Join(a.DataDir, "agent", localstore.DBFile))
		if err != nil {
			b.Fatal(err)
		}
		cleanUpRuntime(b, a.DataDir)
		cleanUpNetwork(b, nil)
		start := time.Now()
		a.Start()
		eventually(b, 3*time.Minute, func() string {
			if got := len(runningContainers(b, a.DataDir, "app")); got != n {
				return fmt.Sprintf("%d of %d containers running", got, n)
			}
			return ""
		})
		offline := time.Since(start)
		running := map[string]bool{}
		for _, id := range runningContainers(b, a.DataDir, "app") {
			running["containerd://"+id] = true
		}
		s.Start()
		back := time.Now()
		// Reconnected: the node's Lease renewed after the server came
		// back, and every pod's status naming the container that runs now.
		eventually(b, 3*time.Minute, func() string {
			lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "bench-offline", metav1.GetOptions{})
			if err != nil || lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Before(&metav1.MicroTime{Time: back}) {
				return "the node's Lease is not renewed yet"
			}
			pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=bench"})
			if err != nil {
				return err.Error()
			}
			for _, p := range pods.Items {
				if len(p.Status.ContainerStatuses) != 1 || !running[p.Status.ContainerStatuses[0].ContainerID] {
					return p.Name + "'s status does not name its running container yet"
				}
			}
			if msg := allUp(); msg != "" {
				return msg
			}
			return ""
		})
		reconnect := time.Since(back)
		b.ReportMetric(float64(fi.Size())/1024, "store-KiB")
		b.ReportMetric(float64(fi.Size())/1024/n, "store-KiB-per-pod")
		b.ReportMetric(offline.Seconds(), "offline-start-30pods-s")
		b.ReportMetric(reconnect.Seconds(), "reconnect-s")
		b.Logf("store %d KiB for %d pods; offline start to %d containers running %v; server ready to the Lease renewed and every pod's status current %v",
			fi.Size()/1024, n, n, offline.Round(10*time.Millisecond), reconnect.Round(10*time.Millisecond))
	}
}
