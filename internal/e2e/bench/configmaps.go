package bench

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// configMaps is the resource of the plain rows: the counter n and the watch
// stamp are data keys.
type configMaps struct{}

var _ resource = configMaps{}

func (configMaps) String() string { return "configmaps" }

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": benchLabel}},
		Data:       map[string]string{"payload": payload, "n": "0"},
	}
}

func (configMaps) create(ctx context.Context, c *client, ns, name string) error {
	_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name), metav1.CreateOptions{})
	return err
}

func (configMaps) get(ctx context.Context, c *client, ns, name string) (runtime.Object, error) {
	return c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (configMaps) list(ctx context.Context, c *client, ns string, opts metav1.ListOptions) (listed, error) {
	l, err := c.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return listed{}, err
	}
	out := listed{items: len(l.Items), ListMeta: l.ListMeta}
	for _, cm := range l.Items {
		if cm.Labels["app"] == benchLabel {
			out.bench++
		}
	}
	return out, nil
}

func (configMaps) update(ctx context.Context, c *client, obj runtime.Object, n int, sent int64) (runtime.Object, error) {
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	cm.Data["n"] = strconv.Itoa(n)
	if sent != 0 {
		cm.Data["sent"] = strconv.FormatInt(sent, 10)
	}
	return c.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
}

func (configMaps) watch(ctx context.Context, c *client, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
}

func (configMaps) sent(obj runtime.Object) (int64, bool) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return 0, false
	}
	sent, err := strconv.ParseInt(cm.Data["sent"], 10, 64)
	return sent, err == nil
}
