package manifests

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// Event reasons.
const (
	ReasonApplied = "AppliedManifest"
	ReasonFailed  = "ApplyManifestFailed"
)

// EventNamespace holds every Event the applier writes, as k3s keeps its
// deploy controller's events in kube-system.
const EventNamespace = metav1.NamespaceSystem

// reportingController names the applier in its Events.
const reportingController = "orch.io/manifests"

// maxMessage is the longest Event message the API takes (upstream's
// NoteLengthLimit for events with an eventTime).
const maxMessage = 1024

// recorder writes Events. They carry an eventTime and a reporting
// controller, which lets them sit in kube-system whatever the namespace
// of the object they are about.
type recorder struct {
	client   kubernetes.Interface
	instance string // the host
	now      func() time.Time
	seq      atomic.Uint64
}

// fileRef is the involvedObject of Events about a whole file (it cannot be
// read or parsed): the kube-system Namespace, where the Events are.
var fileRef = corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: EventNamespace}

// ref is the involvedObject of an Event about obj.
func ref(obj *unstructured.Unstructured) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(),
		Name: obj.GetName(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()}
}

// event writes one Event; an error is returned for the caller to log.
func (r *recorder) event(ctx context.Context, about corev1.ObjectReference, eventType, reason, message string) error {
	now := r.now()
	if len(message) > maxMessage {
		cut := maxMessage - len("…")
		for cut > 0 && !utf8.RuneStart(message[cut]) {
			cut--
		}
		message = message[:cut] + "…"
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("orch-manifests.%x.%d", now.UnixNano(), r.seq.Add(1)),
			Namespace: EventNamespace,
		},
		InvolvedObject:      about,
		Reason:              reason,
		Message:             message,
		Type:                eventType,
		Source:              corev1.EventSource{Component: FieldManager, Host: r.instance},
		FirstTimestamp:      metav1.NewTime(now),
		LastTimestamp:       metav1.NewTime(now),
		Count:               1,
		EventTime:           metav1.NewMicroTime(now),
		Action:              "Apply",
		ReportingController: reportingController,
		ReportingInstance:   r.instance,
	}
	_, err := r.client.CoreV1().Events(EventNamespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}
