package rootcacertpublisher

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

const rootCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// TestPublisher: kube-root-ca.crt appears in existing and new namespaces,
// comes back after deletion and is written back after an edit.
func TestPublisher(t *testing.T) {
	ctx := context.Background()
	env := controllertest.New(t, "existing")
	client := env.Client
	c := New(env.Context, []byte(rootCA))
	env.Start(t, c)

	published := func(ns string, uidNot string) func() (bool, error) {
		return func() (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return string(cm.UID) != uidNot && cm.Data[CAKey] == rootCA && len(cm.Data) == 1 && cm.Annotations[DescriptionAnnotation] == Description, nil
		}
	}
	envtest.Eventually(t, "kube-root-ca.crt in a namespace older than the controller", published("existing", ""))
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "kube-root-ca.crt in a new namespace", published("team", ""))

	first, err := client.CoreV1().ConfigMaps("team").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps("team").Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "kube-root-ca.crt restored after deletion", published("team", string(first.UID)))

	edited, err := client.CoreV1().ConfigMaps("team").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edited.Data = map[string]string{CAKey: "tampered", "extra": "x"}
	delete(edited.Annotations, DescriptionAnnotation)
	if _, err := client.CoreV1().ConfigMaps("team").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "kube-root-ca.crt written back after an edit", published("team", ""))
}
