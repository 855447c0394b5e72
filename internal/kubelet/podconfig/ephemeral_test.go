package podconfig

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAsContainerAliases(t *testing.T) {
	ec := &corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}
	c := AsContainer(ec)
	c.Image = "busybox:2"
	if c.Name != "debugger" || ec.Image != "busybox:2" {
		t.Errorf("container %q image %q: not the ephemeral container's fields", c.Name, ec.Image)
	}
}
