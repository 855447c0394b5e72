package poddefaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                        corev1.PullAlways,
		"nginx:latest":                 corev1.PullAlways,
		"nginx:1.27":                   corev1.PullIfNotPresent,
		"localhost:5000/nginx":         corev1.PullAlways,
		"localhost:5000/nginx:v1":      corev1.PullIfNotPresent,
		"nginx@sha256:" + hex64:        corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + hex64: corev1.PullAlways,
		"Not A Valid Image":            corev1.PullIfNotPresent,
	} {
		if got := defaultPullPolicy(image); got != want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
