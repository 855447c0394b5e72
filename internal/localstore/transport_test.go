package localstore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"orch/internal/envtest"
)

// link is the network between an agent and the server: cut, every
// request fails to connect and every open answer (a watch) breaks.
type link struct {
	next http.RoundTripper
	cut  atomic.Bool
	mu   sync.Mutex
	open map[io.Closer]bool
}

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}

func (l *link) RoundTrip(req *http.Request) (*http.Response, error) {
	if l.cut.Load() {
		return nil, errRefused
	}
	resp, err := l.next.RoundTrip(req)
	if err == nil {
		l.mu.Lock()
		l.open[resp.Body] = true
		l.mu.Unlock()
	}
	return resp, err
}

func (l *link) setCut(cut bool) {
	l.cut.Store(cut)
	if cut {
		l.mu.Lock()
		for body := range l.open {
			body.Close()
		}
		l.open = map[io.Closer]bool{}
		l.mu.Unlock()
	}
}

// agentConfig is cfg through l and then the store.
func agentConfig(cfg *rest.Config, l *link, s *Store) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		l.next = rt
		return l
	})
	return s.Config(c)
}

// podInformer follows the pods of node n1, as the kubelet does, until the
// test ends.
func podInformer(t *testing.T, client kubernetes.Interface) cache.SharedIndexInformer {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=n1"
	}))
	inf := factory.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	factory.StartWithContext(ctx)
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	return inf
}

// names are the names of the informer's pods, with a label's value.
func names(inf cache.SharedIndexInformer) map[string]string {
	out := map[string]string{}
	for _, obj := range inf.GetStore().List() {
		pod := obj.(*corev1.Pod)
		out[pod.Name] = pod.Labels["v"]
	}
	return out
}

// storedNames are names for the store's pods of node n1.
func storedNames(t *testing.T, s *Store) map[string]string {
	t.Helper()
	s.flush()
	body, ok, err := s.listBody("/api/v1/pods?fieldSelector=spec.nodeName=n1")
	if !ok || err != nil {
		return nil
	}
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, pod := range list.Items {
		out[pod.Name] = pod.Labels["v"]
	}
	return out
}

// namespaceWithAccount makes namespace ns with its default service
// account.
func namespaceWithAccount(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	envtest.Create(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	envtest.Create(t, admin.CoreV1().ServiceAccounts("ns").Create, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
}

// TestOfflineRestart records through the real apiserver, then restarts
// the store with the server unreachable: the informer, a Secret's GET and
// a token come from the store; when the link is back, the API's view
// (a pod deleted, a Secret changed while the node was away) wins.
func TestOfflineRestart(t *testing.T) {
	srv := envtest.Start(t)
	admin := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	namespaceWithAccount(t, admin)
	envtest.Create(t, admin.CoreV1().Secrets("ns").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "one"}})
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"p1", "p2"} {
		pods[name] = envtest.Create(t, admin.CoreV1().Pods("ns").Create, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"v": "1"}},
			Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}},
		})
	}
	envtest.Create(t, admin.CoreV1().Pods("ns").Create, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"},
		Spec: corev1.PodSpec{NodeName: "n2", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
	tokenRequest := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p1", UID: pods["p1"].UID}}}

	dir := t.TempDir()
	l := &link{open: map[io.Closer]bool{}}
	s := openStore(t, dir)
	client := kubernetes.NewForConfigOrDie(agentConfig(srv.Config, l, s))
	inf := podInformer(t, client)
	if got := names(inf); len(got) != 2 {
		t.Fatalf("the informer has %v, want p1 and p2", got)
	}
	if _, err := client.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := client.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "default", tokenRequest, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A change the watch brings is recorded.
	envtest.Update(t, "p1", admin.CoreV1().Pods("ns").Get, admin.CoreV1().Pods("ns").Update, func(p *corev1.Pod) { p.Labels["v"] = "2" })
	envtest.EventuallyTrue(t, "the store to record the change of p1", func() bool { return storedNames(t, s)["p1"] == "2" })

	// "Reboot" with the server out of reach.
	l.setCut(true)
	s.Close()
	s = openStore(t, dir)
	client = kubernetes.NewForConfigOrDie(agentConfig(srv.Config, l, s))
	inf = podInformer(t, client)
	if got := names(inf); len(got) != 2 || got["p1"] != "2" {
		t.Fatalf("offline, the informer has %v, want p1 (v=2) and p2", got)
	}
	secret, err := client.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{})
	if err != nil || string(secret.Data["k"]) != "one" {
		t.Fatalf("offline Secret: %v %v", secret, err)
	}
	offline, err := client.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "default", tokenRequest, metav1.CreateOptions{})
	if err != nil || offline.Status.Token != tr.Status.Token {
		t.Fatalf("offline token: %v (the stored one: %v)", err, offline.Status.Token == tr.Status.Token)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "never-read", metav1.GetOptions{}); err == nil {
		t.Fatal("offline, a ConfigMap never read was answered")
	}
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, pods["p1"], metav1.UpdateOptions{}); err == nil {
		t.Fatal("offline, a write succeeded")
	}

	// While the node is away: p2 is deleted and the Secret changes.
	if err := admin.CoreV1().Pods("ns").Delete(ctx, "p2", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	envtest.Update(t, "s", admin.CoreV1().Secrets("ns").Get, admin.CoreV1().Secrets("ns").Update, func(s *corev1.Secret) {
		s.Data["k"] = []byte("two")
	})
	l.setCut(false)
	// The agent's next request that reaches the server (a Lease renewal,
	// say) ends the store's answers.
	if _, err := client.CoreV1().Namespaces().Get(ctx, "ns", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the informer to follow the API again", func() bool {
		got := names(inf)
		return len(got) == 1 && got["p1"] == "2"
	})
	envtest.Eventually(t, "the Secret to be the API's", func() (bool, error) {
		secret, err := client.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{})
		return err == nil && string(secret.Data["k"]) == "two", err
	})
	envtest.EventuallyTrue(t, "the store to follow the API again", func() bool {
		got := storedNames(t, s)
		return len(got) == 1 && got["p1"] == "2"
	})
}

// clock is a test's clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestAwayForADay: a running agent's link is cut and its store's clock
// moves 25 hours on (a day away, shortened). The stored token, handed out
// just after the cut, has expired by then and is not; a new informer
// still lists the pods from the store. Meanwhile the
// API changes and etcd compacts past every revision the agent saw. With
// the link back, the informer follows the API again and a token request
// reaches the server for a fresh token.
func TestAwayForADay(t *testing.T) {
	srv := envtest.Start(t)
	admin := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	namespaceWithAccount(t, admin)
	var p1 *corev1.Pod
	for _, name := range []string{"p1", "p2"} {
		p := envtest.Create(t, admin.CoreV1().Pods("ns").Create, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"v": "1"}},
			Spec:       corev1.PodSpec{NodeName: "n1", ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		})
		if name == "p1" {
			p1 = p
		}
	}
	tokenRequest := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p1", UID: p1.UID}}}

	clk := &clock{now: time.Now()}
	s, err := Open(t.TempDir(), Options{Log: envtest.Logger(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l := &link{open: map[io.Closer]bool{}}
	client := kubernetes.NewForConfigOrDie(agentConfig(srv.Config, l, s))
	inf := podInformer(t, client)
	tr, err := client.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "default", tokenRequest, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	s.flush() // the writer has written the token
	l.setCut(true)
	if stored, err := client.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "default", tokenRequest, metav1.CreateOptions{}); err != nil || stored.Status.Token != tr.Status.Token {
		t.Fatalf("just cut off, the store does not hand out the token it recorded: %v", err)
	}
	clk.add(25 * time.Hour)
	if _, err := client.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "default", tokenRequest, metav1.CreateOptions{}); err == nil {
		t.Fatal("a day away, the store handed out an expired token")
	}
	// An informer started now (a restarted kubelet) lists from the store.
	if got := names(podInformer(t, client)); len(got) != 2 {
		t.Fatalf("a day away, a new informer has %v from the store, want p1 and p2", got)
	}

	for v := range 3 {
		envtest.Update(t, "p1", admin.CoreV1().Pods("ns").Get, admin.CoreV1().Pods("ns").Update, func(p *corev1.Pod) {
			p.Labels["v"] = fmt.Sprint(v + 2)
		})
	}
	if err := admin.CoreV1().Pods("ns").Delete(ctx, "p2", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	rev, err := srv.Store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	l.setCut(false)
	back := time.Now()
	// The agent's next request that reaches the server (a Lease
	// renewal, say; a Namespace is nothing the store answers) ends the
	// store's answers: the store's clock stands still, so its offline
	// window would not end by itself.
	if _, err := client.CoreV1().Namespaces().Get(ctx, "ns", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the informer to follow the API again", func() bool {
		got := names(inf)
		return len(got) == 1 && got["p1"] == "4"
	})
	t.Logf("the informer followed the API %v after the link came back", time.Since(back).Round(time.Millisecond))
	fresh, err := client.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "default", tokenRequest, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Status.Token == tr.Status.Token {
		t.Error("back from a day away, the token is the old one")
	}
}
