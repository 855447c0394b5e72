package nodepassword

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	env := controllertest.New(t, SecretNamespace)
	env.Start(t, New(env.Context))
	return env.Client
}

func passwordSecret(node string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: node + SecretSuffix, Namespace: SecretNamespace, Labels: map[string]string{SecretLabel: "true"}},
		Data:       map[string][]byte{"hash": []byte("x")},
	}
}

// TestNodeDeletionFreesName: a password secret gets the UID of its Node
// while the Node exists and is deleted with it; a secret whose Node was
// never registered, and other secrets, are left alone.
func TestNodeDeletionFreesName(t *testing.T) {
	client := start(t)
	ctx := context.Background()
	secrets := client.CoreV1().Secrets(SecretNamespace)
	for _, s := range []*corev1.Secret{
		passwordSecret("n1"),
		passwordSecret("unregistered"),
		{ObjectMeta: metav1.ObjectMeta{Name: "other" + SecretSuffix, Namespace: SecretNamespace}}, // not labelled
	} {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the Node's UID recorded on its password secret", func() (bool, error) {
		s, err := secrets.Get(ctx, "n1"+SecretSuffix, metav1.GetOptions{})
		return err == nil && s.Annotations[NodeUIDAnnotation] == string(node.UID), err
	})

	if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "password secret deleted with its Node", func() (bool, error) {
		_, err := secrets.Get(ctx, "n1"+SecretSuffix, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// A Node registered after the deletions gets its UID recorded: by then
	// the controller has handled every earlier event (one worker, keys in
	// the order of their events), the other secrets' included.
	if _, err := secrets.Create(ctx, passwordSecret("marker"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	marker, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "marker"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the marker Node's UID recorded on its password secret", func() (bool, error) {
		s, err := secrets.Get(ctx, "marker"+SecretSuffix, metav1.GetOptions{})
		return err == nil && s.Annotations[NodeUIDAnnotation] == string(marker.UID), err
	})
	for _, name := range []string{"unregistered" + SecretSuffix, "other" + SecretSuffix} {
		if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("secret %s: %v (it must be kept)", name, err)
		}
	}
}

// TestSecretOfDeletedNodeAtStart: a secret that recorded a Node which no
// longer exists (deleted while no controller ran) is deleted at start.
func TestSecretOfDeletedNodeAtStart(t *testing.T) {
	client := start(t)
	ctx := context.Background()
	s := passwordSecret("gone")
	s.Annotations = map[string]string{NodeUIDAnnotation: "0000-old"}
	if _, err := client.CoreV1().Secrets(SecretNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "password secret of a deleted Node removed", func() (bool, error) {
		_, err := client.CoreV1().Secrets(SecretNamespace).Get(ctx, s.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func TestNodeOf(t *testing.T) {
	for in, want := range map[string]string{"n1" + SecretSuffix: "n1", SecretSuffix: "", "n1": "", "a.b" + SecretSuffix: "a.b"} {
		got, ok := nodeOf(in)
		if got != want || ok != (want != "") {
			t.Errorf("nodeOf(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
