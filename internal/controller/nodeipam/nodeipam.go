// Package nodeipam gives every Node a pod network (spec.podCIDR and
// spec.podCIDRs) from each cluster CIDR, as upstream's range allocator
// does: a /24 of the IPv4 one and a /64 of the IPv6 one by default, in the
// order of --cluster-cidr (dual stack: two podCIDRs, the first the
// primary). As upstream, a node that has its CIDRs keeps them: a cluster
// made dual-stack later gives the second family to new nodes only. A CIDR is free again once its node is gone: the
// allocation is recomputed from the nodes that exist, so it survives restarts
// and needs no state of its own.
package nodeipam

import (
	"context"
	"encoding/json"
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
	ranges   []Range
}

// Range is one cluster CIDR and the size of the networks a node gets.
type Range struct {
	CIDR     *net.IPNet
	MaskSize int
}

// Default node CIDR sizes, as upstream's --node-cidr-mask-size-ipv4/-ipv6.
const (
	DefaultMaskSizeIPv4 = 24
	DefaultMaskSizeIPv6 = 64
)

// Ranges pairs each cluster CIDR with its family's default node CIDR size.
func Ranges(clusterCIDRs []*net.IPNet) []Range {
	out := make([]Range, len(clusterCIDRs))
	for i, c := range clusterCIDRs {
		out[i] = Range{CIDR: c, MaskSize: DefaultMaskSizeIPv4}
		if c.IP.To4() == nil {
			out[i].MaskSize = DefaultMaskSizeIPv6
		}
	}
	return out
}

// New returns the controller handing out a network of each range.
func New(ctx controller.Context, ranges []Range) (*Controller, error) {
	if len(ranges) == 0 {
		return nil, fmt.Errorf("node IPAM needs a cluster CIDR")
	}
	for _, r := range ranges {
		ones, bits := r.CIDR.Mask.Size()
		if r.MaskSize < ones || r.MaskSize > bits {
			return nil, fmt.Errorf("node CIDR size /%d does not fit in the cluster CIDR %s", r.MaskSize, r.CIDR)
		}
		if r.MaskSize-ones > 16 {
			// As upstream: more than 2^16 node networks is a mistake.
			return nil, fmt.Errorf("node CIDR size /%d is more than 16 bits longer than the cluster CIDR %s", r.MaskSize, r.CIDR)
		}
	}
	informer := ctx.Informers.Core().V1().Nodes()
	c := &Controller{
		client: ctx.Client, nodes: informer.Lister(), synced: informer.Informer().HasSynced,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recorder: ctx.Recorder("node-ipam-controller"), log: ctx.Log.With("controller", "nodeipam"),
		ranges: ranges,
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

// sync gives node name the lowest free CIDR of each range. One worker runs, so two nodes
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
	var cidrs []string
	for _, r := range c.ranges {
		cidr, err := NextFree(r.CIDR, r.MaskSize, used)
		if err != nil {
			c.recorder.Eventf(node, corev1.EventTypeWarning, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", name)
			return err
		}
		cidrs = append(cidrs, cidr)
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidrs[0], "podCIDRs": cidrs}})
	updated, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "node-ipam-controller"})
	if err != nil {
		return err
	}
	c.log.Info("assigned pod CIDRs", "node", name, "cidrs", cidrs)
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
	// Whole bytes of host bits first: an IPv6 /64 has 64 of them, more
	// than a uint64 shift can take.
	carry := uint64(index) << (hostBits % 8)
	for i := len(ip) - 1 - hostBits/8; i >= 0 && carry > 0; i-- {
		sum := uint64(ip[i]) + carry&0xff
		ip[i] = byte(sum)
		carry = carry>>8 + sum>>8
	}
	return ip
}
