// Package nodeipam gives every Node a pod network (spec.podCIDR and
// spec.podCIDRs) from the cluster CIDR, a /24 each by default, as upstream's
// range allocator does. A CIDR is free again once its node is gone: the
// allocation is recomputed from the nodes that exist, so it survives restarts
// and needs no state of its own.
package nodeipam

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Controller assigns pod CIDRs to nodes.
type Controller struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	log      *slog.Logger
	cidr     *net.IPNet
	maskSize int
}

// New returns the controller for clusterCIDR, handing out /maskSize networks.
func New(ctx controller.Context, clusterCIDR *net.IPNet, maskSize int) (*Controller, error) {
	ones, bits := clusterCIDR.Mask.Size()
	if maskSize < ones || maskSize > bits {
		return nil, fmt.Errorf("node CIDR size /%d does not fit in the cluster CIDR %s", maskSize, clusterCIDR)
	}
	informer := ctx.Informers.Core().V1().Nodes()
	c := &Controller{
		client: ctx.Client, nodes: informer.Lister(), synced: informer.Informer().HasSynced,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recorder: ctx.Recorder("node-ipam-controller"), log: ctx.Log.With("controller", "nodeipam"),
		cidr: clusterCIDR, maskSize: maskSize,
	}
	informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	if node, ok := obj.(*corev1.Node); ok && node.Spec.PodCIDR == "" {
		c.queue.Add(node.Name)
	}
}

// Start assigns CIDRs until ctx ends (one worker: see sync).
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: []cache.InformerSynced{c.synced}, Log: c.log})
}

// sync gives node name the lowest free CIDR. One worker runs, so two nodes
// never get the same CIDR from this process; the informer catches up before
// the next node because the patch's result is waited for.
func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && node.Spec.PodCIDR != "") {
		return nil
	}
	if err != nil {
		return err
	}
	all, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, n := range all {
		for _, cidr := range n.Spec.PodCIDRs {
			used[cidr] = true
		}
		if n.Spec.PodCIDR != "" {
			used[n.Spec.PodCIDR] = true
		}
	}
	cidr, err := NextFree(c.cidr, c.maskSize, used)
	if err != nil {
		c.recorder.Eventf(node, corev1.EventTypeWarning, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", name)
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, cidr, cidr)
	updated, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "node-ipam-controller"})
	if err != nil {
		return err
	}
	c.log.Info("assigned a pod CIDR", "node", name, "cidr", cidr)
	waitSeen(ctx, c.nodes, updated.Name)
	return nil
}

// waitSeen waits (up to 5 s) until the lister shows the node's CIDR, so the
// next allocation counts it as used.
func waitSeen(ctx context.Context, nodes corelisters.NodeLister, name string) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if n, err := nodes.Get(name); err == nil && n.Spec.PodCIDR != "" {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// NextFree returns the lowest /maskSize network inside cidr not in used.
func NextFree(cidr *net.IPNet, maskSize int, used map[string]bool) (string, error) {
	ones, bits := cidr.Mask.Size()
	count := 1 << min(maskSize-ones, 30)
	base := cidr.IP.Mask(cidr.Mask)
	for i := 0; i < count; i++ {
		subnet := &net.IPNet{IP: offsetNetwork(base, i, bits-maskSize), Mask: net.CIDRMask(maskSize, bits)}
		if !used[subnet.String()] {
			return subnet.String(), nil
		}
	}
	return "", fmt.Errorf("no /%d networks are left in the cluster CIDR %s: use a larger --cluster-cidr", maskSize, cidr)
}

// offsetNetwork is base plus index networks of 2^hostBits addresses.
func offsetNetwork(base net.IP, index, hostBits int) net.IP {
	ip := make(net.IP, len(base))
	copy(ip, base)
	carry := uint64(index) << hostBits
	for i := len(ip) - 1; i >= 0 && carry > 0; i-- {
		sum := uint64(ip[i]) + carry&0xff
		ip[i] = byte(sum)
		carry = carry>>8 + sum>>8
	}
	return ip
}
