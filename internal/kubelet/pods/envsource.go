package pods

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/kubelet/podconfig"
)

// envSource reads what containers' environments refer to straight from
// the API (no cache yet).
type envSource struct{ client kubernetes.Interface }

var _ podconfig.EnvSource = envSource{}

func (s envSource) ConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	return s.client.CoreV1().ConfigMaps(namespace).Get(context.TODO(), name, metav1.GetOptions{})
}

func (s envSource) Secret(namespace, name string) (*corev1.Secret, error) {
	return s.client.CoreV1().Secrets(namespace).Get(context.TODO(), name, metav1.GetOptions{})
}

func (s envSource) Services() ([]*corev1.Service, error) {
	list, err := s.client.CoreV1().Services("").List(context.TODO(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
