// Package nodepassword frees a node name when its Node is deleted: it
// deletes the Secret kube-system/NAME.node-password.orch in which the server
// recorded the hash of the password of the agent that first joined as NAME,
// so another agent may take the name.
//
// It is level-triggered: while Node NAME exists its password secret carries
// the Node's UID in the annotation NodeUIDAnnotation; a password secret
// whose annotation names a Node that no longer exists (or exists with
// another UID, i.e. was deleted and created again by someone else) is
// deleted. A secret without the annotation belongs to an agent that joined
// but whose kubelet has not registered its Node yet, and is kept.
package nodepassword

import (
	"context"
	"errors"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "nodepassword"

// The secrets the server writes when an agent joins (internal/join/api.go
// holds the same names; controllers do not import the agent side).
const (
	SecretNamespace = "kube-system"
	SecretSuffix    = ".node-password.orch"
	SecretLabel     = "orch.io/node-password"
	// NodeUIDAnnotation records the UID of the Node the secret was seen with.
	NodeUIDAnnotation = "orch.io/node-uid"
)

// Controller deletes the password secrets of deleted Nodes.
type Controller struct {
	log     *slog.Logger
	client  kubernetes.Interface
	nodes   corelisters.NodeLister
	secrets corelisters.SecretLister
	// factory is the controller's own informer factory for the labelled
	// secrets of kube-system (not every secret of the cluster).
	factory informers.SharedInformerFactory
	synced  []cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller on ctx's shared Node informer and an informer
// of its own for the password secrets, which Start starts.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	nodes := ctx.Informers.Core().V1().Nodes()
	factory := informers.NewSharedInformerFactoryWithOptions(ctx.Client, 10*time.Minute,
		informers.WithNamespace(SecretNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = SecretLabel + "=true" }))
	secrets := factory.Core().V1().Secrets()
	var clk clock.WithTicker = ctx.Clock
	c := &Controller{
		log:     ctx.Log.With("controller", Name),
		client:  ctx.Client,
		nodes:   nodes.Lister(),
		secrets: secrets.Lister(),
		factory: factory,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: clk}),
	}
	nodeReg, err1 := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNode,
		UpdateFunc: func(_, obj any) { c.enqueueNode(obj) },
		DeleteFunc: c.enqueueNode,
	})
	secretReg, err2 := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSecret,
		UpdateFunc: func(_, obj any) { c.enqueueSecret(obj) },
	})
	if err := errors.Join(err1, err2); err != nil {
		c.log.Error("cannot watch nodes and node password secrets", "err", err)
		c.synced = []cache.InformerSynced{nodes.Informer().HasSynced, secrets.Informer().HasSynced}
	} else {
		c.synced = []cache.InformerSynced{nodeReg.HasSynced, secretReg.HasSynced}
	}
	return c
}

func (c *Controller) enqueueNode(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		c.queue.Add(node.Name)
	}
}

func (c *Controller) enqueueSecret(obj any) {
	if secret, ok := obj.(*corev1.Secret); ok {
		if node, ok := nodeOf(secret.Name); ok {
			c.queue.Add(node)
		}
	}
}

func nodeOf(secretName string) (string, bool) {
	if len(secretName) <= len(SecretSuffix) || secretName[len(secretName)-len(SecretSuffix):] != SecretSuffix {
		return "", false
	}
	return secretName[:len(secretName)-len(SecretSuffix)], true
}

// Start runs the workers until ctx ends. The caller starts the shared
// informer factory; the controller starts its own secret informer.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("Starting controller")
	defer c.log.Info("Shutting down controller")
	c.factory.StartWithContext(ctx)
	defer c.factory.Shutdown()
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: c.synced, Log: c.log})
}

// sync reconciles the password secret of node name.
func (c *Controller) sync(ctx context.Context, name string) error {
	secret, err := c.secrets.Secrets(SecretNamespace).Get(name + SecretSuffix)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	recorded := types.UID(secret.Annotations[NodeUIDAnnotation])
	node, err := c.nodes.Get(name)
	switch {
	case err == nil && node.UID == recorded:
		return nil
	case err == nil && recorded == "":
		return c.recordUID(ctx, secret, node.UID)
	case err == nil, apierrors.IsNotFound(err) && recorded != "":
		// The Node the name was bound to is gone (a Node of the same
		// name with another UID was created after a deletion).
		return c.deleteSecret(ctx, secret, name)
	case apierrors.IsNotFound(err):
		return nil // joined, but not registered yet
	default:
		return err
	}
}

func (c *Controller) recordUID(ctx context.Context, secret *corev1.Secret, uid types.UID) error {
	secret = secret.DeepCopy()
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[NodeUIDAnnotation] = string(uid)
	_, err := c.client.CoreV1().Secrets(secret.Namespace).Update(ctx, secret, metav1.UpdateOptions{FieldManager: "orch-" + Name})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Controller) deleteSecret(ctx context.Context, secret *corev1.Secret, node string) error {
	// The preconditions make sure a secret written again meanwhile (a new
	// join after the deletion) is not the one deleted.
	uid, rv := secret.UID, secret.ResourceVersion
	err := c.client.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	switch {
	case err == nil:
		c.log.Info("node deleted: its name is free to join again", "node", node, "secret", secret.Namespace+"/"+secret.Name)
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil // gone or changed: a later event brings it back
	default:
		return err
	}
}
