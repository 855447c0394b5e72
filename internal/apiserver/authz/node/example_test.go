package node_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/authz/node"
)

// The apiserver feeds the authorizer from its watch caches and asks it on
// every request; a kubelet reads a secret only while a pod bound to its node
// uses it.
func Example() {
	a := node.New()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "1"},
		Spec: corev1.PodSpec{NodeName: "node1", Volumes: []corev1.Volume{{Name: "tls",
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}}}},
	}
	a.Update(pod)

	kubelet := authz.User{Name: "system:node:node1", Groups: []string{authz.NodesGroup}}
	get := authz.Attributes{User: kubelet, Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "default", Name: "web-tls"}
	d, _, _ := a.Authorize(context.Background(), get)
	fmt.Println(d)

	a.Delete(pod)
	d, reason, _ := a.Authorize(context.Background(), get)
	fmt.Println(d, "-", reason)
	// Output:
	// allow
	// no opinion - no relationship found between node 'node1' and this object
}
