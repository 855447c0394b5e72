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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/images"
	"orch/internal/network"
)

// TestLocalPathStorage is issue 23's first two acceptances on two nodes:
// a StatefulSet whose volumeClaimTemplate names no class gets a bound
// local-path volume per replica on the replica's node; a file written
// there survives `kubectl delete pod` and a restart of the node's agent;
// deleting the claims after scaling down removes the volumes and their
// directories. A pod's generic ephemeral volume gets a claim of its own,
// which goes with the pod.
func TestLocalPathStorage(t *testing.T) {
	c := startNetCluster(t, network.BackendVXLAN, 91)
	ctx := context.Background()
	root := filepath.Join(c.s.Dir, "storage") // --default-local-storage-path's default
	c.s.KubectlIn(t, fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: main, image: %s, imagePullPolicy: Never, command: [sh, -c, "exec sleep 1000000000"], volumeMounts: [{name: data, mountPath: /data}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 64Mi}}
`, images.BusyboxRef), "apply", "-f", "-")

	dirs := map[string]string{} // claim → its volume's directory
	for _, pod := range []string{"db-0", "db-1"} {
		p := waitPodIn(t, c, "default", pod)
		claim, err := c.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-"+pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "local-path" || claim.Status.Phase != corev1.ClaimBound {
			t.Fatalf("claim %s: class %v, phase %s; want bound, of the default class local-path", claim.Name, claim.Spec.StorageClassName, claim.Status.Phase)
		}
		pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
		if node != p.Spec.NodeName || pv.Spec.Local == nil || filepath.Dir(pv.Spec.Local.Path) != root {
			t.Fatalf("volume %s: node %s, local %+v; want on %s (the pod's node), under %s", pv.Name, node, pv.Spec.Local, p.Spec.NodeName, root)
		}
		dirs[claim.Name] = pv.Spec.Local.Path
		c.s.Kubectl(t, "exec", pod, "--", "sh", "-c", "echo written-by-"+pod+" > /data/file")
		if data, err := os.ReadFile(filepath.Join(pv.Spec.Local.Path, "file")); err != nil || string(data) != "written-by-"+pod+"\n" {
			t.Fatalf("the file in %s on the host: %q, %v", pv.Spec.Local.Path, data, err)
		}
	}
	// readBack waits for pod to read its file back (its kubelet may be
	// starting).
	readBack := func(pod string) {
		t.Helper()
		eventually(t, time.Minute, func() string {
			r := c.s.Run(t, Cmd{Args: []string{"exec", pod, "--", "cat", "/data/file"}})
			if r.Code != 0 || r.Stdout != "written-by-"+pod+"\n" {
				return fmt.Sprintf("%s to read its file back: %q, %s", pod, r.Stdout, r.Stderr)
			}
			return ""
		})
	}

	// The pod is made again, on the volume's node, with the file there.
	old := waitPodIn(t, c, "default", "db-0")
	c.s.Kubectl(t, "delete", "pod", "db-0")
	eventually(t, 2*time.Minute, func() string {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil || p.UID == old.UID || p.Status.Phase != corev1.PodRunning {
			return "db-0 made again and running"
		}
		return ""
	})
	readBack("db-0")

	// The agent of db-1's node restarts; the pod and its file stay.
	db1 := waitPodIn(t, c, "default", "db-1")
	agent := c.agent[db1.Spec.NodeName]
	agent.Stop()
	agent.Start()
	readBack("db-1")
	if p := waitPodIn(t, c, "default", "db-1"); p.UID != db1.UID {
		t.Errorf("db-1 was made again over the agent's restart")
	}

	// Scaled down, the pods go; the claims stay until deleted, then the
	// volumes and their directories go.
	c.s.Kubectl(t, "scale", "statefulset", "db", "--replicas=0")
	eventually(t, 2*time.Minute, func() string {
		pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil || len(pods.Items) != 0 {
			return "the db pods gone"
		}
		return ""
	})
	c.s.Kubectl(t, "delete", "pvc", "data-db-0", "data-db-1")
	eventually(t, 2*time.Minute, func() string {
		for claim, dir := range dirs {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				return fmt.Sprintf("the directory of %s (%s) removed", claim, dir)
			}
		}
		pvs, err := c.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil || len(pvs.Items) != 0 {
			return fmt.Sprintf("no volumes left (%v)", err)
		}
		return ""
	})

	// A generic ephemeral volume: its claim is made for the pod and goes
	// with it.
	c.s.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: %s, imagePullPolicy: Never, command: [sh, -c, "echo hi > /scratch/file && exec sleep 1000000000"], volumeMounts: [{name: tmp, mountPath: /scratch}]}
  volumes:
  - name: tmp
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOncePod]
          resources: {requests: {storage: 16Mi}}
`, images.BusyboxRef), "apply", "-f", "-")
	pod := waitPodIn(t, c, "default", "scratch")
	claim, err := c.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "scratch-tmp", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(claim); owner == nil || owner.UID != pod.UID || claim.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim scratch-tmp: owner %+v, phase %s; want the pod's, bound", owner, claim.Status.Phase)
	}
	if got := c.s.Kubectl(t, "exec", "scratch", "--", "cat", "/scratch/file"); got != "hi\n" {
		t.Fatalf("the ephemeral volume holds %q", got)
	}
	c.s.Kubectl(t, "delete", "pod", "scratch")
	eventually(t, 2*time.Minute, func() string {
		_, err := c.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "scratch-tmp", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return "claim scratch-tmp deleted with its pod"
		}
		pvs, err := c.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil || len(pvs.Items) != 0 {
			return "its volume deleted"
		}
		return ""
	})
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) != 0 {
		t.Errorf("directories left under %s: %s", root, strings.Join(left, ", "))
	}
}
