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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The namespaces the workload uses; each starts empty on a fresh server.
const (
	nsList   = "bench-list"   // listObjects objects of each resource, read by get and list
	nsCreate = "bench-create" // every create phase adds here
	nsUpdate = "bench-update" // one object of each resource per client, u-<client>
	nsWatch  = "bench-watch"  // one object of each resource per writer, w-<writer>
)

const (
	listObjects = 500
	pageSize    = 100
	payloadSize = 512
	benchLabel  = "orch-bench" // the value of label app on every object the bench makes
)

var payload = strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", payloadSize/32)

// resource is the kind of object a workload drives: configMaps through the
// typed clientset (JSON or protobuf), or widgets, the bench's custom
// resource, through the dynamic client (JSON). Every object the bench makes
// is labelled app=orch-bench and carries the payload and a counter n.
type resource interface {
	fmt.Stringer // the plural, for notes
	create(ctx context.Context, c *client, ns, name string) error
	get(ctx context.Context, c *client, ns, name string) (runtime.Object, error)
	list(ctx context.Context, c *client, ns string, opts metav1.ListOptions) (listed, error)
	// update sends a copy of obj (as get or update returned it) with n set
	// and, when sent is not 0, stamped with sent; it returns what the server
	// stored.
	update(ctx context.Context, c *client, obj runtime.Object, n int, sent int64) (runtime.Object, error)
	watch(ctx context.Context, c *client, ns string, opts metav1.ListOptions) (watch.Interface, error)
	// sent is the stamp of an object a watch delivered, if it has one.
	sent(obj runtime.Object) (int64, bool)
}

// listed is what one list answered: how many items, how many of them are
// the bench's, and the list's metadata.
type listed struct {
	items, bench int
	metav1.ListMeta
}

// setup makes, with clients, the namespaces and, of each resource, the
// listObjects objects to get and list and one object per update client and
// per watch writer.
func setup(clients []*client, resources []resource, updaters, writers int) error {
	ctx := context.Background()
	for _, ns := range []string{nsList, nsCreate, nsUpdate, nsWatch} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := clients[0].CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace %q: %w", ns, err)
		}
	}
	type object struct {
		res      resource
		ns, name string
	}
	var objs []object
	for _, res := range resources {
		for i := range listObjects {
			objs = append(objs, object{res, nsList, listName(i)})
		}
		for c := range updaters {
			objs = append(objs, object{res, nsUpdate, "u-" + strconv.Itoa(c)})
		}
		for w := range writers {
			objs = append(objs, object{res, nsWatch, "w-" + strconv.Itoa(w)})
		}
	}
	r := runPhase(clients, len(objs), 5*time.Minute, func(ctx context.Context, c *client, _, seq int) error {
		o := objs[seq]
		return o.res.create(ctx, c, o.ns, o.name)
	})
	if r.errors > 0 || r.ops != len(objs) {
		return fmt.Errorf("setup created %d of %d objects; errors: %v", r.ops, len(objs), r.errMsgs)
	}
	return nil
}

func listName(i int) string { return fmt.Sprintf("l-%04d", i) }

// opCreate creates a new object of res per call in nsCreate; tag keeps names
// of different phases apart.
func opCreate(res resource, tag string) opFunc {
	return func(ctx context.Context, c *client, _, seq int) error {
		return res.create(ctx, c, nsCreate, tag+"-"+strconv.Itoa(seq))
	}
}

// opGet gets a random one of the listObjects objects of res.
func opGet(res resource) opFunc {
	return func(ctx context.Context, c *client, _, _ int) error {
		_, err := res.get(ctx, c, nsList, listName(rand.IntN(listObjects)))
		return err
	}
}

// opList lists all listObjects objects of res in one request (with what the
// cluster itself puts in every namespace, e.g. orch's kube-root-ca.crt).
func opList(res resource) opFunc {
	return func(ctx context.Context, c *client, _, _ int) error {
		l, err := res.list(ctx, c, nsList, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if l.bench != listObjects {
			return fmt.Errorf("list of %s in %s returned %d bench items, want %d", res, nsList, l.bench, listObjects)
		}
		return nil
	}
}

// updater updates each client's own object of res (<prefix><client> in ns),
// so no two clients conflict, carrying the resourceVersion each update
// returns; with stamp set, each update carries the time it was sent.
type updater struct {
	res        resource
	ns, prefix string
	stamp      bool
	cur        []runtime.Object
}

func newUpdater(res resource, ns, prefix string, clients int) *updater {
	return &updater{res: res, ns: ns, prefix: prefix, cur: make([]runtime.Object, clients)}
}

func (u *updater) op(ctx context.Context, c *client, i, seq int) error {
	if u.cur[i] == nil {
		got, err := u.res.get(ctx, c, u.ns, u.prefix+strconv.Itoa(i))
		if err != nil {
			return err
		}
		u.cur[i] = got
	}
	var sent int64
	if u.stamp {
		sent = time.Now().UnixNano()
	}
	got, err := u.res.update(ctx, c, u.cur[i], seq, sent)
	if err != nil {
		u.cur[i] = nil // fetch afresh next time
		return err
	}
	u.cur[i] = got
	return nil
}

// pager walks the listObjects objects of res pageSize at a time; one op is
// one page request, and each client keeps its own continue token.
type pager struct {
	res  resource
	cont []string
}

func newPager(res resource, clients int) *pager {
	return &pager{res: res, cont: make([]string, clients)}
}

func (p *pager) op(ctx context.Context, c *client, i, _ int) error {
	l, err := p.res.list(ctx, c, nsList, metav1.ListOptions{Limit: pageSize, Continue: p.cont[i]})
	if err != nil {
		p.cont[i] = ""
		return err
	}
	p.cont[i] = l.Continue
	if l.items != pageSize && l.Continue != "" { // the last page may be short
		return fmt.Errorf("page of %s in %s returned %d items, want %d", p.res, nsList, l.items, pageSize)
	}
	return nil
}
