package zzsmoketmp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/apitest"
)

func table(t *testing.T, url string) string {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var tbl metav1.Table
	json.Unmarshal(b, &tbl)
	out := ""
	for _, c := range tbl.ColumnDefinitions {
		out += c.Name + " | "
	}
	out += "\n"
	for _, r := range tbl.Rows {
		out += fmt.Sprintf("%v\n", r.Cells)
	}
	if len(tbl.ColumnDefinitions) == 0 {
		out += string(b)
	}
	return out
}

func TestSmoke(t *testing.T) {
	s := apitest.Start(t)
	c := kubernetes.NewForConfigOrDie(s.Config)
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	d, err := c.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deployment replicas=%d strategy=%+v gen=%d", *d.Spec.Replicas, d.Spec.Strategy.RollingUpdate, d.Generation)
	_, err = c.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: appsv1.DeploymentSpec{Template: tmpl}}, metav1.CreateOptions{})
	t.Logf("bad deployment: %v", err)
	sc, err := c.AppsV1().Deployments("default").UpdateScale(ctx, "web", &autoscaling(3).Scale, metav1.UpdateOptions{})
	t.Logf("scale: %+v %v", sc.Status, err)

	j, err := c.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "pi", Image: "perl"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("job labels=%v selector=%v", j.Labels, j.Spec.Selector)
	_, err = c.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "noretry"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pi", Image: "perl"}}}}}}, metav1.CreateOptions{})
	t.Logf("job without restartPolicy: %v", err)
	j.Spec.Suspend = ptr.To(true)
	_, err = c.BatchV1().Jobs("default").Update(ctx, j, metav1.UpdateOptions{})
	t.Logf("job update: %v", err)

	_, err = c.BatchV1().CronJobs("default").Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cj"},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}}}, metav1.CreateOptions{})
	t.Logf("cronjob: %v", err)
	_, err = c.BatchV1().CronJobs("default").Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cj2"},
		Spec: batchv1.CronJobSpec{Schedule: "61 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}}}, metav1.CreateOptions{})
	t.Logf("bad cronjob: %v", err)

	ds, err := c.AppsV1().DaemonSets("default").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	ds, err = c.AppsV1().DaemonSets("default").Update(ctx, ds, metav1.UpdateOptions{})
	t.Logf("ds annotations=%v gen=%d err=%v", ds.Annotations, ds.Generation, err)

	_, err = c.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb"},
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}, metav1.CreateOptions{})
	t.Logf("rolebinding: %v", err)

	for _, p := range []string{"/apis/apps/v1/namespaces/default/deployments", "/apis/batch/v1/namespaces/default/jobs", "/apis/batch/v1/namespaces/default/cronjobs",
		"/apis/apps/v1/namespaces/default/daemonsets", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", "/apis/apps/v1/namespaces/default/replicasets"} {
		t.Logf("%s\n%s", p, table(t, s.URL+p))
	}
	resp, _ := http.Get(s.URL + "/apis/batch/v1/namespaces/default/jobs?fieldSelector=status.successful=0")
	b, _ := io.ReadAll(resp.Body)
	t.Logf("field selector: %d %d bytes", resp.StatusCode, len(b))
}
