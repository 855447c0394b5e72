package podautoscaler_test

import (
	"context"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/controller"
	"orch/internal/controller/podautoscaler"
	"orch/internal/envtest"
)

// upstreamRules are the rules of upstream's bootstrap ClusterRole
// system:controller:horizontal-pod-autoscaler.
var upstreamRules = []rbacv1.PolicyRule{
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}},
	{Verbs: []string{"update"}, APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers/status"}},
	{Verbs: []string{"get", "update"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
	{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}},
	{Verbs: []string{"list", "watch"}, APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}},
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"custom.metrics.k8s.io"}, Resources: []string{"*"}},
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"external.metrics.k8s.io"}, Resources: []string{"*"}},
	{Verbs: []string{"create", "update", "patch"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}},
}

// TestUpstreamRoleSuffices runs the controller as the service account
// kube-system:horizontal-pod-autoscaler holding only upstream's role (its
// informers, like orch's shared ones, read as another identity): it
// reads discovery, scales a Deployment, writes the status and events,
// and may list the resource metrics API.
func TestUpstreamRoleSuffices(t *testing.T) {
	srv := envtest.StartWith(t, envtest.Options{RBAC: true})
	admin := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const sa = "horizontal-pod-autoscaler"
	user := "system:serviceaccount:kube-system:" + sa
	envtest.Create(t, admin.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test:" + sa}, Rules: upstreamRules})
	envtest.Create(t, admin.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test:" + sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "test:" + sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: sa}}})
	config := srv.ConfigAs(user, "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	client := kubernetes.NewForConfigOrDie(config)

	// The resource metrics API: authorized (envtest serves it only with
	// kubelets, so it is not found), unlike for a user without the role.
	envtest.Eventually(t, "metrics.k8s.io pods listable", func() (bool, error) {
		err := client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods").Do(ctx).Error()
		return !apierrors.IsForbidden(err), err
	})
	stranger := kubernetes.NewForConfigOrDie(srv.ConfigAs("stranger", "system:authenticated"))
	if err := stranger.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods").Do(ctx).Error(); !apierrors.IsForbidden(err) {
		t.Errorf("a user without the role listing pod metrics: %v, want Forbidden", err)
	}

	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	fake := clocktesting.NewFakeClock(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	env := &envtest.Env{Server: srv, Client: admin, Informers: informers.NewSharedInformerFactory(admin, 0)}
	metrics := &usage{clock: fake, pods: map[string]podUsage{}}
	c, err := podautoscaler.NewWithMetrics(controller.Context{Client: client, Config: config, Informers: env.Informers,
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		}, Log: envtest.Logger(), Clock: fake}, metrics)
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t, c)

	web := map[string]string{"app": "web"}
	envtest.Create(t, admin.AppsV1().Deployments(ns).Create, deployment("web", 1, web))
	runningPod(t, admin, fake, "web-0", web)
	metrics.set("web-0", web, 100)
	envtest.Create(t, admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Create,
		cpuHPA("web", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, 50, nil))
	envtest.Eventually(t, "the deployment scaled by the service account", func() (bool, error) {
		fake.Step(time.Second) // a first sync may precede the role reaching the authorizer
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 2, err
	})
	envtest.Eventually(t, "the status written", func() (bool, error) {
		h, err := admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && h.Status.DesiredReplicas == 2, err
	})
	waitEvent(t, admin, "web", "Normal SuccessfulRescale New size: 2")
}
