package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMemoryPressureTaintsTheNode: an agent whose memory.available
// threshold (--eviction-hard memory.available<100000Gi) no machine can
// meet reports MemoryPressure True with upstream's reason and message,
// and the node lifecycle controller gives the node the memory-pressure
// NoSchedule taint. The flag replaces the default thresholds, so
// DiskPressure and PIDPressure stay False.
func TestMemoryPressureTaintsTheNode(t *testing.T) {
	s := StartServer(t)
	StartAgent(t, s, "e2e-pressure", "--eviction-hard", "memory.available<100000Gi")
	client := s.client(t)

	eventually(t, 2*time.Minute, func() string {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "e2e-pressure", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		conds := map[corev1.NodeConditionType]corev1.NodeCondition{}
		for _, c := range n.Status.Conditions {
			conds[c.Type] = c
		}
		if c := conds[corev1.NodeMemoryPressure]; c.Status != corev1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" ||
			c.Message != "kubelet has insufficient memory available" {
			return fmt.Sprintf("MemoryPressure = %s/%s/%q, want True/KubeletHasInsufficientMemory", c.Status, c.Reason, c.Message)
		}
		if c := conds[corev1.NodeDiskPressure]; c.Status != corev1.ConditionFalse || c.Reason != "KubeletHasNoDiskPressure" {
			return fmt.Sprintf("DiskPressure = %s/%s, want False/KubeletHasNoDiskPressure (no disk threshold given)", c.Status, c.Reason)
		}
		if c := conds[corev1.NodePIDPressure]; c.Status != corev1.ConditionFalse || c.Reason != "KubeletHasSufficientPID" {
			return fmt.Sprintf("PIDPressure = %s/%s, want False/KubeletHasSufficientPID", c.Status, c.Reason)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeMemoryPressure && taint.Effect == corev1.TaintEffectNoSchedule {
				return ""
			}
		}
		return fmt.Sprintf("taints %v, want %s:NoSchedule", n.Spec.Taints, corev1.TaintNodeMemoryPressure)
	})
}
