package node

import (
	"context"
	"testing"

	"orch/internal/apiserver/authz"
)

func res(verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{User: nodeUser("node1"), Verb: verb, ResourceRequest: true, APIGroup: group,
		Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func withSelector(a authz.Attributes, fields string) authz.Attributes {
	a.FieldSelector = fields
	return a
}

func as(a authz.Attributes, u authz.User) authz.Attributes {
	a.User = u
	return a
}

func TestAuthorize(t *testing.T) {
	noRel := "no relationship found between node 'node1' and this object"
	secret := func(verb, name string) authz.Attributes { return res(verb, "", "secrets", "", "ns1", name) }
	tests := []struct {
		name   string
		attrs  authz.Attributes
		want   authz.Decision
		reason string
	}{
		// Who is a node.
		{"not a node", as(secret("get", "vol-secret"), authz.User{Name: "jane", Groups: []string{authz.NodesGroup}}), authz.NoOpinion, ""},
		{"node name outside system:nodes", as(secret("get", "vol-secret"), authz.User{Name: "system:node:node1"}), authz.NoOpinion, ""},
		{"node without a name", as(secret("get", "vol-secret"), authz.User{Name: "system:node:", Groups: []string{authz.NodesGroup}}), authz.NoOpinion, `unknown node for user "system:node:"`},

		// Secrets, each way a pod names one.
		{"secret volume", secret("get", "vol-secret"), authz.Allow, ""},
		{"image pull secret", secret("get", "pull-secret"), authz.Allow, ""},
		{"init container env", secret("get", "env-secret"), authz.Allow, ""},
		{"envFrom secret", secret("get", "shared"), authz.Allow, ""},
		{"projected secret", secret("get", "proj-secret"), authz.Allow, ""},
		{"CSI node publish secret", secret("get", "csi-secret"), authz.Allow, ""},
		{"volume's node stage secret", secret("get", "stage-secret"), authz.Allow, ""},
		{"volume's controller secret", secret("get", "controller-secret"), authz.NoOpinion, noRel},
		{"another node's secret", secret("get", "node2-secret"), authz.NoOpinion, noRel},
		{"a mirror pod grants no secret", secret("get", "mirror-secret"), authz.NoOpinion, noRel},
		{"an unbound pod grants nothing", secret("get", "unbound-secret"), authz.NoOpinion, noRel},
		{"same name, other namespace", res("get", "", "secrets", "", "ns2", "vol-secret"), authz.NoOpinion, noRel},
		{"list one secret by name", withSelector(secret("list", ""), "metadata.name=vol-secret"), authz.Allow, ""},
		{"watch one secret by name", withSelector(secret("watch", ""), "metadata.name=vol-secret"), authz.Allow, ""},
		{"watch another secret by name", withSelector(secret("watch", ""), "metadata.name=node2-secret"), authz.NoOpinion, noRel},
		{"list all secrets", secret("list", ""), authz.NoOpinion, "No Object name found"},
		{"list secrets by label", withSelector(secret("list", ""), "type=Opaque"), authz.NoOpinion, "No Object name found"},
		{"update a secret", secret("update", "vol-secret"), authz.NoOpinion, "can only read resources of this type"},
		{"secret subresource", res("get", "", "secrets", "x", "ns1", "vol-secret"), authz.NoOpinion, "cannot read subresource"},
		{"secrets across namespaces", withSelector(res("list", "", "secrets", "", "", ""), "metadata.name=vol-secret"), authz.NoOpinion, "can only read namespaced object of this type"},

		// Config maps.
		{"configmap volume", res("get", "", "configmaps", "", "ns1", "vol-cm"), authz.Allow, ""},
		{"projected configmap", res("get", "", "configmaps", "", "ns1", "proj-cm"), authz.Allow, ""},
		{"envFrom configmap", withSelector(res("watch", "", "configmaps", "", "ns1", ""), "metadata.name=envfrom-cm"), authz.Allow, ""},
		{"unrelated configmap", res("get", "", "configmaps", "", "ns1", "other"), authz.NoOpinion, noRel},

		// Claims and volumes.
		{"claim", res("get", "", "persistentvolumeclaims", "", "ns1", "claim1"), authz.Allow, ""},
		{"ephemeral claim POD-VOLUME", res("get", "", "persistentvolumeclaims", "", "ns1", "pod1-scratch"), authz.Allow, ""},
		{"unrelated claim", res("get", "", "persistentvolumeclaims", "", "ns1", "claim-unused"), authz.NoOpinion, noRel},
		{"list claims", res("list", "", "persistentvolumeclaims", "", "ns1", ""), authz.NoOpinion, "can only get individual resources of this type"},
		{"claim status patch", res("patch", "", "persistentvolumeclaims", "status", "ns1", "claim1"), authz.Allow, ""},
		{"claim status update", res("update", "", "persistentvolumeclaims", "status", "ns1", "claim1"), authz.Allow, ""},
		{"claim status get", res("get", "", "persistentvolumeclaims", "status", "ns1", "claim1"), authz.NoOpinion, "can only get/update/patch this type"},
		{"unrelated claim status", res("patch", "", "persistentvolumeclaims", "status", "ns1", "claim-unused"), authz.NoOpinion, noRel},
		{"other claim subresource", res("get", "", "persistentvolumeclaims", "x", "ns1", "claim1"), authz.NoOpinion, "cannot get subresource"},
		{"volume bound to the pod's claim", res("get", "", "persistentvolumes", "", "", "pv1"), authz.Allow, ""},
		{"volume bound to an unused claim", res("get", "", "persistentvolumes", "", "", "pv2"), authz.NoOpinion, noRel},
		{"unbound volume", res("get", "", "persistentvolumes", "", "", "pv3"), authz.NoOpinion, noRel},
		{"volume from another node", as(res("get", "", "persistentvolumes", "", "", "pv1"), nodeUser("node2")), authz.NoOpinion, "no relationship found between node 'node2' and this object"},
		{"get without a name", res("get", "", "persistentvolumes", "", "", ""), authz.NoOpinion, "No Object name found"},

		// Volume attachments.
		{"attachment to the node", res("get", "storage.k8s.io", "volumeattachments", "", "", "va1"), authz.Allow, ""},
		{"attachment to another node", as(res("get", "storage.k8s.io", "volumeattachments", "", "", "va1"), nodeUser("node2")), authz.NoOpinion, "no relationship found between node 'node2' and this object"},
		{"list attachments", res("list", "storage.k8s.io", "volumeattachments", "", "", ""), authz.NoOpinion, "can only get individual resources of this type"},

		// Service accounts.
		{"token for a pod's account", res("create", "", "serviceaccounts", "token", "ns1", "sa1"), authz.Allow, ""},
		{"token for another node's account", res("create", "", "serviceaccounts", "token", "ns1", "sa2"), authz.NoOpinion, noRel},
		{"get a pod's account", res("get", "", "serviceaccounts", "", "ns1", "sa1"), authz.Allow, ""},
		{"get another account", res("get", "", "serviceaccounts", "", "ns1", "sa2"), authz.NoOpinion, noRel},
		{"create an account", res("create", "", "serviceaccounts", "", "ns1", ""), authz.NoOpinion, "can only create tokens for individual service accounts"},
		{"list accounts", res("list", "", "serviceaccounts", "", "ns1", ""), authz.NoOpinion, "can only create tokens for individual service accounts"},
		{"other account subresource", res("create", "", "serviceaccounts", "x", "ns1", "sa1"), authz.NoOpinion, "can only create token subresource of serviceaccount"},

		// Leases.
		{"own lease", res("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node1"), authz.Allow, ""},
		{"create a lease", res("create", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), authz.Allow, ""},
		{"another node's lease", res("get", "coordination.k8s.io", "leases", "", "kube-node-lease", "node2"), authz.NoOpinion, "can only access node lease with the same name as the requesting node"},
		{"lease elsewhere", res("get", "coordination.k8s.io", "leases", "", "kube-system", "node1"), authz.NoOpinion, `can only access leases in the "kube-node-lease" system namespace`},
		{"list leases", res("list", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), authz.NoOpinion, "can only get, create, update, patch, or delete a node lease"},

		// CSINodes.
		{"own CSINode", res("patch", "storage.k8s.io", "csinodes", "", "", "node1"), authz.Allow, ""},
		{"create a CSINode", res("create", "storage.k8s.io", "csinodes", "", "", ""), authz.Allow, ""},
		{"another CSINode", res("get", "storage.k8s.io", "csinodes", "", "", "node2"), authz.NoOpinion, "can only access CSINode with the same name as the requesting node"},
		{"list CSINodes", res("list", "storage.k8s.io", "csinodes", "", "", ""), authz.NoOpinion, "can only get, create, update, patch, or delete a CSINode"},
		{"CSINode subresource", res("get", "storage.k8s.io", "csinodes", "status", "", "node1"), authz.NoOpinion, "cannot authorize CSINode subresources"},

		// Nodes.
		{"own Node", res("get", "", "nodes", "", "", "node1"), authz.Allow, ""},
		{"own Node by selector", withSelector(res("watch", "", "nodes", "", "", ""), "metadata.name=node1"), authz.Allow, ""},
		{"another Node", res("get", "", "nodes", "", "", "node2"), authz.NoOpinion, "node 'node1' cannot read 'node2', only its own Node object"},
		{"all Nodes", res("list", "", "nodes", "", "", ""), authz.NoOpinion, "node 'node1' cannot read all nodes, only its own Node object"},
		{"register a Node", res("create", "", "nodes", "", "", ""), authz.Allow, ""},
		{"patch a Node", res("patch", "", "nodes", "", "", "node2"), authz.Allow, ""},
		{"delete a Node", res("delete", "", "nodes", "", "", "node1"), authz.NoOpinion, ""},
		{"Node status", res("patch", "", "nodes", "status", "", "node1"), authz.Allow, ""},
		{"read Node status", res("get", "", "nodes", "status", "", "node1"), authz.NoOpinion, ""},
		{"Node proxy", res("get", "", "nodes", "proxy", "", "node1"), authz.NoOpinion, ""},

		// Pods.
		{"own pod", res("get", "", "pods", "", "ns1", "pod1"), authz.Allow, ""},
		{"own mirror pod", res("get", "", "pods", "", "ns1", "mirror"), authz.Allow, ""},
		{"another node's pod", res("get", "", "pods", "", "ns1", "pod2"), authz.NoOpinion, noRel},
		{"pods of the node", withSelector(res("list", "", "pods", "", "", ""), "spec.nodeName=node1"), authz.Allow, ""},
		{"pods of the node, ==", withSelector(res("watch", "", "pods", "", "", ""), "spec.nodeName==node1"), authz.Allow, ""},
		{"pods of the node and more", withSelector(res("watch", "", "pods", "", "", ""), "spec.nodeName=node1,status.phase!=Failed"), authz.Allow, ""},
		{"pods of another node", withSelector(res("list", "", "pods", "", "", ""), "spec.nodeName=node2"), authz.NoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"pods not on another node", withSelector(res("list", "", "pods", "", "", ""), "spec.nodeName!=node2"), authz.NoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"all pods", res("list", "", "pods", "", "", ""), authz.NoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"one own pod by name", withSelector(res("watch", "", "pods", "", "ns1", ""), "metadata.name=pod1"), authz.Allow, ""},
		{"one other pod by name", withSelector(res("watch", "", "pods", "", "ns1", ""), "metadata.name=pod2"), authz.NoOpinion, noRel},
		{"create a pod", res("create", "", "pods", "", "ns1", ""), authz.Allow, ""},
		{"delete a pod", res("delete", "", "pods", "", "ns1", "pod2"), authz.Allow, ""},
		{"update a pod", res("update", "", "pods", "", "ns1", "pod1"), authz.NoOpinion, ""},
		{"pod status", res("patch", "", "pods", "status", "ns1", "pod1"), authz.Allow, ""},
		{"evict a pod", res("create", "", "pods", "eviction", "ns1", "pod1"), authz.Allow, ""},
		{"pod exec", res("create", "", "pods", "exec", "ns1", "pod1"), authz.NoOpinion, ""},
		{"pod log", res("get", "", "pods", "log", "ns1", "pod1"), authz.NoOpinion, ""},

		// The static rules.
		{"services", res("watch", "", "services", "", "", ""), authz.Allow, ""},
		{"core events", res("create", "", "events", "", "ns1", ""), authz.Allow, ""},
		{"events.k8s.io events", res("create", "events.k8s.io", "events", "", "ns1", ""), authz.NoOpinion, ""},
		{"endpoints get", res("get", "", "endpoints", "", "ns1", "x"), authz.Allow, ""},
		{"endpoints list", res("list", "", "endpoints", "", "ns1", ""), authz.NoOpinion, ""},
		{"token reviews", res("create", "authentication.k8s.io", "tokenreviews", "", "", ""), authz.Allow, ""},
		{"subject access reviews", res("create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), authz.Allow, ""},
		{"csi drivers", res("list", "storage.k8s.io", "csidrivers", "", "", ""), authz.Allow, ""},
		{"runtime classes", res("watch", "node.k8s.io", "runtimeclasses", "", "", ""), authz.Allow, ""},
		{"certificate signing requests", res("create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), authz.Allow, ""},
		{"deployments", res("list", "apps", "deployments", "", "", ""), authz.NoOpinion, ""},
		{"cluster trust bundles", res("list", "certificates.k8s.io", "clustertrustbundles", "", "", ""), authz.Allow, ""},
		{"resource claims (not in the graph)", res("get", "resource.k8s.io", "resourceclaims", "", "ns1", "c"), authz.NoOpinion, ""},
		{"non-resource path", authz.Attributes{User: nodeUser("node1"), Verb: "get", Path: "/healthz"}, authz.NoOpinion, ""},
	}
	a := fixture()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if d != tc.want || reason != tc.reason {
				t.Errorf("got %v %q, want %v %q", d, reason, tc.want, tc.reason)
			}
		})
	}
}
