package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/images"
)

// TestHorizontalPodAutoscaler is issue 23's third acceptance: an HPA on a
// Deployment of a CPU-burning busybox scales it up, `kubectl get hpa` shows
// the current and the target utilisation, and once the load stops (a
// ConfigMap the pods read says so) it scales back down after the
// scale-down stabilization window. The times it took are logged; they are
// not asserted (the timeouts are generous).
func TestHorizontalPodAutoscaler(t *testing.T) {
	s := StartServerWithAgent(t)
	client := s.client(t)
	ctx := context.Background()
	// Each pod burns up to its limit (200m) while /load/burn says yes:
	// 200% of its request, four times the 50% target.
	burn := `while true; do if [ "$(cat /load/burn)" = yes ]; then i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; else sleep 1; fi; done`
	s.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: load}
data: {burn: "yes"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: burn}
spec:
  replicas: 1
  selector: {matchLabels: {app: burn}}
  template:
    metadata: {labels: {app: burn}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: %s
        imagePullPolicy: Never
        command: [sh, -c, %q]
        resources: {requests: {cpu: 100m}, limits: {cpu: 200m}}
        volumeMounts: [{name: load, mountPath: /load}]
      volumes:
      - {name: load, configMap: {name: load}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burn}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burn}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 30
`, images.BusyboxRef, burn), "apply", "-f", "-")

	replicas := func() int32 {
		d, err := client.AppsV1().Deployments("default").Get(ctx, "burn", metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil {
			return -1
		}
		return *d.Spec.Replicas
	}
	start := time.Now()
	eventually(t, 5*time.Minute, func() string {
		if n := replicas(); n < 2 {
			return fmt.Sprintf("the HPA to scale burn up (replicas %d)", n)
		}
		return ""
	})
	t.Logf("scaled up to %d replicas %s after the HPA was made", replicas(), time.Since(start).Round(time.Second))
	// kubectl shows the current and the target utilisation.
	utilisation := regexp.MustCompile(`cpu: [0-9]+%/50%`)
	eventually(t, time.Minute, func() string {
		if out := s.Kubectl(t, "get", "hpa", "burn"); !utilisation.MatchString(out) {
			return "kubectl get hpa to show cpu: N%/50%:\n" + out
		}
		return ""
	})
	describe := s.Kubectl(t, "describe", "hpa", "burn")
	for _, want := range []string{"AbleToScale", "ScalingActive", "ValidMetricFound", "SuccessfulRescale"} {
		if !strings.Contains(describe, want) {
			t.Errorf("kubectl describe hpa has no %s:\n%s", want, describe)
		}
	}

	// The load stops: down to one replica once the window has passed.
	s.Kubectl(t, "patch", "configmap", "load", "-p", `{"data":{"burn":"no"}}`)
	stopped := time.Now()
	eventually(t, 5*time.Minute, func() string {
		if n := replicas(); n != 1 {
			return fmt.Sprintf("the HPA to scale burn down to 1 (replicas %d)", n)
		}
		return ""
	})
	t.Logf("scaled down to 1 replica %s after the load stopped (stabilization window 30 s)", time.Since(stopped).Round(time.Second))
}
