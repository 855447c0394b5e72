// Package rootcacertpublisher is kube-controller-manager's root CA
// certificate publisher: every namespace has a ConfigMap named
// kube-root-ca.crt whose ca.crt is the cluster CA, so pods can verify the
// apiserver (the kube-api-access-* volume projects it). The ConfigMap is
// created when a namespace appears, written back when it is changed, and
// created again when it is deleted; namespaces being deleted are left
// alone.
package rootcacertpublisher

import (
	"context"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "root-ca-cert-publisher"

// Workers is how many namespaces are synced at once, as upstream.
const Workers = 1

// Upstream's name, key and description of the ConfigMap.
const (
	ConfigMapName         = "kube-root-ca.crt"
	CAKey                 = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller keeps kube-root-ca.crt in every namespace.
type Controller struct {
	log      *slog.Logger
	client   kubernetes.Interface
	cmLister corelisters.ConfigMapLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	rootCA   string
}

// New builds the controller for the PEM bundle rootCA on the shared
// namespace and ConfigMap informers of ctx.Informers.
func New(ctx controller.Context, rootCA []byte) *Controller {
	ctx = ctx.WithDefaults()
	namespaces := ctx.Informers.Core().V1().Namespaces()
	configMaps := ctx.Informers.Core().V1().ConfigMaps()
	c := &Controller{
		log:      ctx.Log.With("controller", Name),
		client:   ctx.Client,
		cmLister: configMaps.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "root_ca_cert_publisher", Clock: ctx.Clock}),
		rootCA: string(rootCA),
	}
	cmReg, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.configMapChanged(obj) },
		DeleteFunc: c.configMapChanged,
	})
	if err != nil {
		// Only a stopped informer refuses handlers.
		c.log.Error("cannot watch config maps", "err", err)
		return c
	}
	nsReg, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.namespaceChanged,
		UpdateFunc: func(_, obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase == corev1.NamespaceActive {
				c.namespaceChanged(obj)
			}
		},
	})
	if err != nil {
		c.log.Error("cannot watch namespaces", "err", err)
		return c
	}
	c.synced = []cache.InformerSynced{cmReg.HasSynced, nsReg.HasSynced}
	return c
}

// configMapChanged queues the namespace of a changed or deleted
// kube-root-ca.crt.
func (c *Controller) configMapChanged(obj any) {
	cm, ok := controller.ObjectFrom[*corev1.ConfigMap](obj)
	if !ok {
		c.log.Error("unexpected object in a config map event", "type", obj)
		return
	}
	if cm.Name == ConfigMapName {
		c.queue.Add(cm.Namespace)
	}
}

func (c *Controller) namespaceChanged(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

// Start runs the workers until ctx ends. The caller starts the informer
// factory.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("Starting controller")
	defer c.log.Info("Shutting down controller")
	return worker.Run(ctx, c.queue, worker.Errors(c.syncNamespace), worker.Options{Workers: Workers, Synced: c.synced, Log: c.log})
}

// syncNamespace creates or corrects the namespace's kube-root-ca.crt.
func (c *Controller) syncNamespace(ctx context.Context, ns string) error {
	want := map[string]string{CAKey: c.rootCA}
	cm, err := c.cmLister.ConfigMaps(ns).Get(ConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       want,
		}
		_, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		// A namespace that is gone or terminating needs no ConfigMap.
		if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		if err == nil {
			c.log.Debug("created the root CA config map", "namespace", ns)
		}
		return err
	case err != nil:
		return err
	}
	if maps.Equal(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	_, err = c.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
