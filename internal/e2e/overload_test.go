package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOverloadGets429 is issue 19's acceptance 5: far more concurrent
// requests than --max-requests-inflight allows get 429 with Retry-After,
// never a 5xx, and the admin's requests succeed meanwhile.
func TestOverloadGets429(t *testing.T) {
	s := startServer(t, false, "127.0.0.1", "--max-requests-inflight=4", "--max-mutating-requests-inflight=2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := s.client(t)
	for i := 0; i < 200; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"v": fmt.Sprint(i)}}
		if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A user outside system:masters who may read everything.
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "configmap-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := func(c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/api/v1/configmaps", nil)
		req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
		return c.Do(req)
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 300,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the status is what is tested

	eventually(t, 30*time.Second, func() string { // the binding reaches the authorizer
		resp, err := list(client)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
	const readers = 300
	codes := map[int]int{}
	var mu sync.Mutex
	var retryAfterMissing int
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := list(client)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				codes[-1]++
				return
			}
			resp.Body.Close()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				retryAfterMissing++
			}
		}()
	}
	adminDone := make(chan error, 1)
	go func() {
		<-start
		for i := 0; i < 20; i++ {
			if _, err := admin.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
				adminDone <- err
				return
			}
		}
		adminDone <- nil
	}()
	close(start)
	wg.Wait()
	if err := <-adminDone; err != nil {
		t.Errorf("the admin's list during the overload: %v", err)
	}
	t.Logf("status codes of %d concurrent lists: %v", readers, codes)
	for code, n := range codes {
		if code >= 500 || code < 0 {
			t.Errorf("%d requests got %d (-1: no answer)", n, code)
		}
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusOK] == 0 || retryAfterMissing > 0 {
		t.Errorf("want some 200s and some 429s, all with Retry-After: %v (%d without)", codes, retryAfterMissing)
	}
}
