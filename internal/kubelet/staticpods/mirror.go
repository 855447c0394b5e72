package staticpods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrNotMirror is returned by Mirror.Sync when the API holds a pod of the
// static pod's name that is not its node's mirror pod: that pod is left
// alone, and the static pod (which runs all the same) has no mirror.
var ErrNotMirror = errors.New("not a mirror pod of this node")

// ErrNodeNotRegistered is returned by Mirror.Sync when the node has no
// Node object yet: a mirror pod is owned by its node.
var ErrNodeNotRegistered = errors.New("node not registered")

// IsMirror reports whether pod is a mirror pod: a pod of the API that
// shows a static pod, marked with the kubernetes.io/config.mirror
// annotation.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationMirror]
	return ok
}

// IsStatic reports whether pod is a static pod, as Source serves it: its
// config.source annotation names a source other than the API. A mirror
// pod, which carries the static pod's annotations into the API, is not.
func IsStatic(pod *corev1.Pod) bool {
	source, ok := pod.Annotations[AnnotationSource]
	return ok && source != SourceAPI && !IsMirror(pod)
}

// isMirrorOf reports whether mirror shows static as it is now: same name
// and namespace, and the hash of static's content.
func isMirrorOf(mirror, static *corev1.Pod) bool {
	hash, ok := mirror.Annotations[AnnotationMirror]
	return ok && mirror.Namespace == static.Namespace && mirror.Name == static.Name &&
		hash == static.Annotations[AnnotationHash]
}

// Mirror keeps the mirror pods of one node's static pods in the API, so
// that the API shows them (kubectl get pods) and their status. It only
// ever deletes mirror pods of its own node.
type Mirror struct {
	client kubernetes.Interface
	node   string
	log    *slog.Logger
}

// NewMirror returns the mirror pod keeper of node nodeName.
func NewMirror(client kubernetes.Interface, nodeName string, log *slog.Logger) *Mirror {
	return &Mirror{client: client, node: nodeName, log: log.With("component", "mirrorpods", "node", nodeName)}
}

// Sync makes the API's pod of static's name its mirror: mirror is that
// pod as the caller last saw it (nil when the API has none). A mirror of
// an earlier version of static (another hash) or one being deleted is
// deleted and created anew; a pod of that name that is not this node's
// mirror is left alone (ErrNotMirror). No mirror is made while the Node
// object is missing (ErrNodeNotRegistered) or being deleted.
func (m *Mirror) Sync(ctx context.Context, static, mirror *corev1.Pod) error {
	if !IsStatic(static) {
		return fmt.Errorf("pod %s/%s is not a static pod: it has no mirror", static.Namespace, static.Name)
	}
	if mirror != nil {
		if !IsMirror(mirror) || mirror.Spec.NodeName != m.node {
			return fmt.Errorf("pod %s/%s of the API (node %q): %w; static pod %q runs without a mirror until it is deleted",
				mirror.Namespace, mirror.Name, mirror.Spec.NodeName, ErrNotMirror, static.Name)
		}
		if mirror.DeletionTimestamp == nil && isMirrorOf(mirror, static) {
			return nil
		}
		if err := m.delete(ctx, mirror, "its static pod changed"); err != nil {
			return err
		}
	}
	return m.create(ctx, static)
}

// DeleteOrphans deletes the mirror pods of this node among apiPods that
// have no static pod of their name in static.
func (m *Mirror) DeleteOrphans(ctx context.Context, static []*corev1.Pod, apiPods []*corev1.Pod) error {
	have := make(map[string]bool, len(static))
	for _, p := range static {
		have[p.Namespace+"/"+p.Name] = true
	}
	var errs []error
	for _, p := range apiPods {
		if !IsMirror(p) || p.Spec.NodeName != m.node || have[p.Namespace+"/"+p.Name] {
			continue
		}
		if err := m.delete(ctx, p, "its static pod is gone"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// delete deletes the mirror pod now (grace 0), only if it is still the
// object of pod's UID. One already gone or replaced is not an error.
func (m *Mirror) delete(ctx context.Context, pod *corev1.Pod, why string) error {
	zero := int64(0)
	err := m.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete mirror pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.log.Info("deleted mirror pod: "+why, "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
	return nil
}

// create creates the mirror of static: a copy with the config.mirror
// annotation and its node as controller owner, as upstream's.
func (m *Mirror) create(ctx context.Context, static *corev1.Pod) error {
	node, err := m.client.CoreV1().Nodes().Get(ctx, m.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("mirror pod %s/%s: %w: node %q has no Node object yet", static.Namespace, static.Name, ErrNodeNotRegistered, m.node)
	}
	if err != nil {
		return fmt.Errorf("mirror pod %s/%s: get node %q: %w", static.Namespace, static.Name, m.node, err)
	}
	if node.DeletionTimestamp != nil {
		m.log.Info("no mirror pod: the node is being deleted", "pod", static.Namespace+"/"+static.Name)
		return nil
	}
	hash := static.Annotations[AnnotationHash]
	pod := static.DeepCopy()
	pod.UID, pod.ResourceVersion = "", ""
	pod.Annotations[AnnotationMirror] = hash
	controller := true
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &controller,
	}}
	created, err := m.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := m.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr == nil && IsMirror(existing) && existing.Spec.NodeName == m.node && existing.DeletionTimestamp == nil &&
			isMirrorOf(existing, static) {
			return nil
		}
		return fmt.Errorf("create mirror pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err != nil {
		return fmt.Errorf("create mirror pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.log.Info("created mirror pod", "pod", pod.Namespace+"/"+pod.Name, "uid", created.UID, "hash", hash)
	return nil
}
