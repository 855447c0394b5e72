// Package simnode simulates nodes for tests and benchmarks, until (and beside)
// real agents: it registers Node objects with capacity, keeps their Leases in
// kube-node-lease fresh, and plays the kubelet's part for pods bound to them:
// they become Running and Ready, finish when asked (the pod annotation
// simnode.orch.dev/finish: Succeeded|Failed, or Finish), and go away when
// deleted gracefully. It talks to the apiserver only through client-go.
package simnode

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// FinishAnnotation on a pod makes its simulated containers exit: "Succeeded"
// (exit 0) or "Failed" (exit 1).
const FinishAnnotation = "simnode.orch.dev/finish"

// Node describes one simulated node.
type Node struct {
	Name   string
	CPU    string // e.g. "4"
	Memory string // e.g. "8Gi"
	Pods   int64  // default 110
	Labels map[string]string
	Taints []corev1.Taint
}

// Simulator runs a set of simulated nodes.
type Simulator struct {
	client kubernetes.Interface
	log    *slog.Logger
	// LeaseInterval is how often leases are renewed (10 s, as the kubelet).
	LeaseInterval time.Duration

	mu      sync.Mutex
	nodes   map[string]Node
	stopped map[string]bool // nodes whose heartbeats are stopped
}

// New returns a simulator that talks to the apiserver through client.
func New(client kubernetes.Interface, log *slog.Logger) *Simulator {
	return &Simulator{client: client, log: log, LeaseInterval: 10 * time.Second,
		nodes: map[string]Node{}, stopped: map[string]bool{}}
}

// Add registers a node (its Node object and Lease) and starts simulating it.
func (s *Simulator) Add(ctx context.Context, n Node) error {
	if n.Pods == 0 {
		n.Pods = 110
	}
	if n.CPU == "" {
		n.CPU = "4"
	}
	if n.Memory == "" {
		n.Memory = "8Gi"
	}
	node, err := nodeObject(n)
	if err != nil {
		return err
	}
	// Simulate the node before it exists: a pod may be bound to it (a
	// daemon pod) as soon as the Node object appears.
	s.mu.Lock()
	s.nodes[n.Name] = n
	s.mu.Unlock()
	_, err = s.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		s.mu.Lock()
		delete(s.nodes, n.Name)
		s.mu.Unlock()
		return fmt.Errorf("register simulated node %q: %w", n.Name, err)
	}
	// Controllers (node IPAM) may change the node meanwhile: retry on conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = node.Status
		_, err = s.client.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("set status of simulated node %q: %w", n.Name, err)
	}
	return s.renewLease(ctx, n.Name)
}

// StopHeartbeat stops renewing a node's Lease (as if it lost the network);
// ResumeHeartbeat starts again.
func (s *Simulator) StopHeartbeat(name string) { s.setStopped(name, true) }

// ResumeHeartbeat renews a node's Lease again.
func (s *Simulator) ResumeHeartbeat(name string) { s.setStopped(name, false) }

func (s *Simulator) setStopped(name string, stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped[name] = stopped
}

func (s *Simulator) heartbeating() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.nodes {
		if !s.stopped[name] {
			names = append(names, name)
		}
	}
	return names
}

func (s *Simulator) simulates(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.nodes[name]
	return ok && !s.stopped[name]
}

func nodeObject(n Node) (*corev1.Node, error) {
	cpu, err := resource.ParseQuantity(n.CPU)
	if err != nil {
		return nil, fmt.Errorf("simulated node %q: cpu %q: %w", n.Name, n.CPU, err)
	}
	mem, err := resource.ParseQuantity(n.Memory)
	if err != nil {
		return nil, fmt.Errorf("simulated node %q: memory %q: %w", n.Name, n.Memory, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem,
		corev1.ResourcePods:             *resource.NewQuantity(n.Pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	labels := map[string]string{"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "simulated"}
	for k, v := range n.Labels {
		labels[k] = v
	}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated node is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: n.Name}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-simulated", OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "simulated://1.0"},
		},
	}, nil
}

// renewLease creates or renews the node's Lease in kube-node-lease.
func (s *Simulator) renewLease(ctx context.Context, name string) error {
	leases := s.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NowMicro()
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return s.postReady(ctx, name)
}

// postReady sets the node's Ready condition back to True when something
// (the node lifecycle controller) changed it, as a kubelet's status update does.
func (s *Simulator) postReady(ctx context.Context, name string) error {
	node, err := s.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return nil
		}
	}
	s.mu.Lock()
	n := s.nodes[name]
	s.mu.Unlock()
	fresh, err := nodeObject(n)
	if err != nil {
		return err
	}
	node.Status.Conditions = fresh.Status.Conditions
	_, err = s.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}
