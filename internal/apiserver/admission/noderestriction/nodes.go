package noderestriction

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// admitNode lets a node write only its own Node. It may register with, or
// change, only the labels kubelets own; it may not change its taints or
// owner references after registering, nor set a configSource: a node that
// relabels or untaints itself could steer workloads meant for other nodes
// to itself.
func admitNode(node string, req Request) error {
	if req.Name != node {
		return forbidden(req, fmt.Errorf("node %q is not allowed to modify node %q", node, req.Name))
	}
	switch req.Operation {
	case Create:
		n, ok := req.Object.(*corev1.Node)
		if !ok {
			return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
		}
		if n.Spec.ConfigSource != nil {
			return forbidden(req, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", node))
		}
		if bad := forbiddenLabels(n.Labels, nil); len(bad) > 0 {
			return forbidden(req, fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", ")))
		}
	case Update:
		n, ok := req.Object.(*corev1.Node)
		if !ok {
			return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
		}
		old, ok := req.OldObject.(*corev1.Node)
		if !ok {
			return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
		}
		// A nil configSource is let through: old kubelets drop the field.
		if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbidden(req, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", node))
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return forbidden(req, fmt.Errorf("node %q is not allowed to modify taints", node))
		}
		if !apiequality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences) {
			return forbidden(req, fmt.Errorf("node %q is not allowed to modify ownerReferences", node))
		}
		if bad := forbiddenLabels(n.Labels, old.Labels); len(bad) > 0 {
			return forbidden(req, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
		}
	}
	return nil
}

// forbiddenLabels are the keys that differ between labels and old (added,
// removed or changed) that a node may not set, sorted: the
// node-restriction.kubernetes.io/ namespace (and its subdomains), and the
// kubernetes.io and k8s.io namespaces except the labels kubelets own.
func forbiddenLabels(labels, old map[string]string) []string {
	var bad []string
	check := func(k string) {
		if reservedLabel(k) && !slices.Contains(bad, k) {
			bad = append(bad, k)
		}
	}
	for k, v := range labels {
		if ov, ok := old[k]; !ok || ov != v {
			check(k)
		}
	}
	for k := range old {
		if _, ok := labels[k]; !ok {
			check(k)
		}
	}
	slices.Sort(bad)
	return bad
}

func reservedLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	if inDomain(ns, corev1.LabelNamespaceNodeRestriction) {
		return true
	}
	return (inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io")) && !kubeletapis.IsKubeletLabel(key)
}

// inDomain reports whether ns is domain or a subdomain of it.
func inDomain(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}
