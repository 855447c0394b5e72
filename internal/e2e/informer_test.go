package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// informerLog records what a shared informer's handlers saw.
type informerLog struct {
	mu      sync.Mutex
	seen    map[string]bool
	relists int // updates whose old and new resourceVersion are equal: a relist replayed them
}

func (l *informerLog) record(event string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[event] = true
}

func (l *informerLog) has(event string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[event]
}

func (l *informerLog) handler(kind string) cache.ResourceEventHandlerFuncs {
	name := func(obj any) string {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		return obj.(metav1.Object).GetName()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { l.record(fmt.Sprintf("add %s %s", kind, name(obj))) },
		UpdateFunc: func(old, obj any) {
			if old.(metav1.Object).GetResourceVersion() == obj.(metav1.Object).GetResourceVersion() {
				l.mu.Lock()
				l.relists++
				l.mu.Unlock()
			}
			l.record(fmt.Sprintf("update %s %s", kind, name(obj)))
		},
		DeleteFunc: func(obj any) { l.record(fmt.Sprintf("delete %s %s", kind, name(obj))) },
	}
}

// TestInformerSurvivesRestart is acceptance item 3: a shared informer on
// pods and configmaps sees every change, rides through a server restart, and
// resumes its watches from where it was instead of listing everything again.
func TestInformerSurvivesRestart(t *testing.T) {
	s := StartServer(t)
	client := kubernetes.NewForConfigOrDie(s.RestConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	log := &informerLog{seen: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("default"))
	factory.Core().V1().ConfigMaps().Informer().AddEventHandler(log.handler("configmap"))
	factory.Core().V1().Pods().Informer().AddEventHandler(log.handler("pod"))
	factory.StartWithContext(ctx)
	defer func() { cancel(); factory.Shutdown() }()
	factory.WaitForCacheSync(ctx.Done())

	change := func(round string) {
		cms := client.CoreV1().ConfigMaps("default")
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + round}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "2"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + round}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"add configmap cm-" + round, "update configmap cm-" + round, "add pod pod-" + round, "delete pod pod-" + round} {
			eventually(t, 30*time.Second, func() string {
				if log.has(want) {
					return ""
				}
				return "the informer has not seen: " + want
			})
		}
	}
	start := time.Now()
	change("before")
	t.Logf("changes seen before the restart after %v", time.Since(start))
	// client-go relists after a watch that closes within a second of its
	// start with no events ("very short watch"): let the watches age first,
	// as any informer that has run for a while has.
	time.Sleep(1500 * time.Millisecond)
	s.Restart()
	t.Logf("restarted after %v", time.Since(start))
	change("after")
	t.Logf("changes seen after the restart after %v", time.Since(start))

	if log.relists != 0 {
		t.Errorf("%d updates replayed unchanged objects: the informer relisted after the restart", log.relists)
	}
	// The restarted server served no list of configmaps or pods: the
	// informers resumed their watches from their last resourceVersion.
	metrics := s.Admin(t).Do(t, "GET", s.URL()+"/metrics", nil, nil)
	for _, resource := range []string{"configmaps", "pods"} {
		if n := requestCount(string(metrics.Body), "list", resource); n != 0 {
			t.Errorf("the restarted server served %d lists of %s, want 0 (a relist)", n, resource)
		}
	}
}

// requestCount sums apiserver_request_total for a verb and resource.
func requestCount(metrics, verb, resource string) int {
	re := regexp.MustCompile(`^apiserver_request_total\{([^}]*)\} (\d+)`)
	total := 0
	for _, line := range strings.Split(metrics, "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil || !strings.Contains(m[1], `verb="`+verb+`"`) || !strings.Contains(m[1], `resource="`+resource+`"`) || !strings.Contains(m[1], `subresource=""`) {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		total += n
	}
	return total
}
