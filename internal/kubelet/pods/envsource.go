package pods

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"

	"orch/internal/kubelet/podconfig"
)

// envSource reads the ConfigMaps and Secrets containers' environments
// refer to from the API, and the Services (for the service link variables
// of every container) from an informer's cache, as upstream's kubelet.
type envSource struct {
	client   kubernetes.Interface
	services listerscorev1.ServiceLister
}

var _ podconfig.EnvSource = envSource{}

func (s envSource) ConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	return s.client.CoreV1().ConfigMaps(namespace).Get(context.TODO(), name, metav1.GetOptions{})
}

func (s envSource) Secret(namespace, name string) (*corev1.Secret, error) {
	return s.client.CoreV1().Secrets(namespace).Get(context.TODO(), name, metav1.GetOptions{})
}

func (s envSource) Services() ([]*corev1.Service, error) {
	return s.services.List(labels.Everything())
}
