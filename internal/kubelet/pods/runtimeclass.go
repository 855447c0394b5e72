package pods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runtimeHandler is the CRI runtime handler of pod's RuntimeClass, as
// upstream's kubelet looks it up: "" (the runtime's default) for a pod
// without one, an error when the class does not exist.
func (w *Workers) runtimeHandler(ctx context.Context, pod *corev1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return "", nil
	}
	rc, err := w.client.NodeV1().RuntimeClasses().Get(ctx, *name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("RuntimeClass %q not found", *name)
	}
	if err != nil {
		return "", fmt.Errorf("look up RuntimeClass %q: %w", *name, err)
	}
	return rc.Handler, nil
}
