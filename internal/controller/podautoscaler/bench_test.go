package podautoscaler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkUtilizationReplicas is one autoscaler's replica calculation for
// a CPU Utilization metric over a target of n pods (two containers each,
// every 20th pod without a sample): what each 15 s sync costs the
// controller besides the API calls.
func BenchmarkUtilizationReplicas(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			usage := make([]int64, n)
			for i := range usage {
				usage[i] = int64(300 + i%400)
			}
			s := scenario{current: int32(n), requests: requests(n, "1.0"), levels: levels(usage...), start: make([]time.Time, n)}
			for i := range s.start {
				s.start[i] = cool
			}
			for i := 0; i < n; i += 20 {
				s.levels[i] = nil
			}
			samples, _, err := resourceSamples(s.podMetrics(), corev1.ResourceCPU, "")
			if err != nil {
				b.Fatal(err)
			}
			in := calcInput{pods: s.pods(), metrics: samples, currentReplicas: s.current, tolerances: defaultTol, readiness: testReady}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, _, _, err := utilizationReplicas(in, corev1.ResourceCPU, "", 50); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
