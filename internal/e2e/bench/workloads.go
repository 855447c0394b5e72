package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The namespaces the workload uses; each starts empty on a fresh server.
const (
	nsList   = "bench-list"   // listObjects configmaps, read by get and list
	nsCreate = "bench-create" // every create phase adds here
	nsUpdate = "bench-update" // one configmap per client, u-<client>
	nsWatch  = "bench-watch"  // one configmap per writer, w-<writer>
)

const (
	listObjects = 500
	pageSize    = 100
	payloadSize = 512
)

var payload = strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", payloadSize/32)

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "orch-bench"}},
		Data:       map[string]string{"payload": payload, "n": "0"},
	}
}

// setup makes, with clients, the namespaces, the listObjects configmaps to get
// and list, and one configmap per update client and per watch writer.
func setup(clients []*kubernetes.Clientset, updaters, writers int) error {
	ctx := context.Background()
	for _, ns := range []string{nsList, nsCreate, nsUpdate, nsWatch} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := clients[0].CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace %q: %w", ns, err)
		}
	}
	objs := make([]*corev1.ConfigMap, 0, listObjects+updaters+writers)
	for i := range listObjects {
		objs = append(objs, configMap(nsList, listName(i)))
	}
	for c := range updaters {
		objs = append(objs, configMap(nsUpdate, "u-"+strconv.Itoa(c)))
	}
	for w := range writers {
		objs = append(objs, configMap(nsWatch, "w-"+strconv.Itoa(w)))
	}
	r := runPhase(clients, len(objs), 5*time.Minute,
		func(ctx context.Context, cs *kubernetes.Clientset, _, seq int) error {
			_, err := cs.CoreV1().ConfigMaps(objs[seq].Namespace).Create(ctx, objs[seq], metav1.CreateOptions{})
			return err
		})
	if r.errors > 0 || r.ops != len(objs) {
		return fmt.Errorf("setup created %d of %d configmaps; errors: %v", r.ops, len(objs), r.errMsgs)
	}
	return nil
}

func listName(i int) string { return fmt.Sprintf("l-%04d", i) }

// opCreate creates a new configmap per call in nsCreate; tag keeps names of
// different phases apart.
func opCreate(tag string) func(context.Context, *kubernetes.Clientset, int, int) error {
	return func(ctx context.Context, cs *kubernetes.Clientset, _, seq int) error {
		_, err := cs.CoreV1().ConfigMaps(nsCreate).Create(ctx, configMap(nsCreate, tag+"-"+strconv.Itoa(seq)), metav1.CreateOptions{})
		return err
	}
}

// opGet gets a random one of the listObjects configmaps.
func opGet(ctx context.Context, cs *kubernetes.Clientset, _, _ int) error {
	_, err := cs.CoreV1().ConfigMaps(nsList).Get(ctx, listName(rand.IntN(listObjects)), metav1.GetOptions{})
	return err
}

// updater updates each client's own configmap (<prefix><client> in ns), so
// no two clients conflict, carrying the resourceVersion each update returns;
// stamp, when set, adds data to each update just before it is sent.
type updater struct {
	ns, prefix string
	stamp      func(data map[string]string)
	cur        []*corev1.ConfigMap
}

func newUpdater(ns, prefix string, clients int) *updater {
	return &updater{ns: ns, prefix: prefix, cur: make([]*corev1.ConfigMap, clients)}
}

func (u *updater) op(ctx context.Context, cs *kubernetes.Clientset, c, seq int) error {
	cms := cs.CoreV1().ConfigMaps(u.ns)
	if u.cur[c] == nil {
		got, err := cms.Get(ctx, u.prefix+strconv.Itoa(c), metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.cur[c] = got
	}
	obj := u.cur[c].DeepCopy()
	obj.Data["n"] = strconv.Itoa(seq)
	if u.stamp != nil {
		u.stamp(obj.Data)
	}
	got, err := cms.Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		u.cur[c] = nil // fetch afresh next time
		return err
	}
	u.cur[c] = got
	return nil
}

// opList lists all listObjects configmaps in one request (with what the
// cluster itself puts in every namespace, e.g. orch's kube-root-ca.crt).
func opList(ctx context.Context, cs *kubernetes.Clientset, _, _ int) error {
	l, err := cs.CoreV1().ConfigMaps(nsList).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	n := 0
	for _, cm := range l.Items {
		if cm.Labels["app"] == "orch-bench" {
			n++
		}
	}
	if n != listObjects {
		return fmt.Errorf("list of %s returned %d bench items, want %d", nsList, n, listObjects)
	}
	return nil
}

// pager walks the listObjects configmaps pageSize at a time; one op is one
// page request, and each client keeps its own continue token.
type pager struct{ cont []string }

func newPager(clients int) *pager { return &pager{cont: make([]string, clients)} }

func (p *pager) op(ctx context.Context, cs *kubernetes.Clientset, c, _ int) error {
	l, err := cs.CoreV1().ConfigMaps(nsList).List(ctx, metav1.ListOptions{Limit: pageSize, Continue: p.cont[c]})
	if err != nil {
		p.cont[c] = ""
		return err
	}
	p.cont[c] = l.Continue
	if len(l.Items) != pageSize && l.Continue != "" { // the last page may be short
		return fmt.Errorf("page of %s returned %d items, want %d", nsList, len(l.Items), pageSize)
	}
	return nil
}
