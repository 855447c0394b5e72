package node

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"orch/internal/apiserver/podrefs"
)

// kind is the type of object a kubelet may reach through its pods.
type kind uint8

const (
	podKind kind = iota
	secretKind
	configMapKind
	claimKind
	volumeKind
	serviceAccountKind
	attachmentKind
)

// key names one object: its kind, namespace (empty for cluster-scoped
// objects) and name.
type key struct {
	kind      kind
	namespace string
	name      string
}

// nsName is a namespaced name.
type nsName struct{ namespace, name string }

// podEntry is what one pod added to the index, so that an update or a
// delete takes exactly that away again.
type podEntry struct {
	node       string
	uid        string
	ephemerals int
	keys       []key
}

// volumeEntry is a persistent volume bound to a claim and the secrets it
// names that a kubelet reads.
type volumeEntry struct {
	claim   nsName
	secrets []nsName
}

// Update records obj's relationships: a *corev1.Pod bound to a node, a
// *corev1.PersistentVolume, or a *storagev1.VolumeAttachment. Feed it
// every add and update the watch caches see; other types are ignored (a
// claim's spec.volumeName is not used: as upstream, a volume reaches its
// claim through the volume's spec.claimRef).
func (a *Authorizer) Update(obj any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.Pod:
		a.updatePod(o)
	case *corev1.PersistentVolume:
		a.removeVolume(o.Name)
		a.addVolume(o)
	case *storagev1.VolumeAttachment:
		a.setAttachment(o.Name, o.Spec.NodeName)
	}
}

// Delete forgets obj's relationships (the same types as Update).
func (a *Authorizer) Delete(obj any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.Pod:
		a.removePod(nsName{o.Namespace, o.Name})
	case *corev1.PersistentVolume:
		a.removeVolume(o.Name)
	case *storagev1.VolumeAttachment:
		a.setAttachment(o.Name, "")
	}
}

// updatePod indexes a pod bound to a node. As upstream, the references of
// a pod are taken again only when its node or UID changes or ephemeral
// containers are added; the rest of a bound pod's spec does not change.
// A pod seen without a node drops what an earlier pod of that name added.
func (a *Authorizer) updatePod(pod *corev1.Pod) {
	id := nsName{pod.Namespace, pod.Name}
	old, ok := a.pods[id]
	if ok && old.node == pod.Spec.NodeName && old.uid == string(pod.UID) &&
		old.ephemerals >= len(pod.Spec.EphemeralContainers) {
		return
	}
	a.removePod(id)
	if pod.Spec.NodeName == "" {
		return
	}
	e := &podEntry{node: pod.Spec.NodeName, uid: string(pod.UID), ephemerals: len(pod.Spec.EphemeralContainers)}
	seen := map[key]bool{}
	add := func(k kind, name string) bool {
		kk := key{k, pod.Namespace, name}
		if !seen[kk] {
			seen[kk] = true
			e.keys = append(e.keys, kk)
		}
		return true
	}
	add(podKind, pod.Name)
	// A mirror pod grants nothing beyond itself: a node creates mirror
	// pods, and must not grant itself other objects through them.
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		if sa := pod.Spec.ServiceAccountName; sa != "" {
			add(serviceAccountKind, sa)
		}
		podrefs.Secrets(pod, func(n string) bool { return add(secretKind, n) })
		podrefs.ConfigMaps(pod, func(n string) bool { return add(configMapKind, n) })
		podrefs.Claims(pod, func(n string) bool { return add(claimKind, n) })
	}
	for _, k := range e.keys {
		a.inc(k, e.node)
	}
	a.pods[id] = e
}

func (a *Authorizer) removePod(id nsName) {
	e, ok := a.pods[id]
	if !ok {
		return
	}
	for _, k := range e.keys {
		a.dec(k, e.node)
	}
	delete(a.pods, id)
}

// addVolume indexes a volume bound to a claim: the volume is reachable
// from the nodes that reach the claim, and so are the secrets it names
// for the kubelet.
func (a *Authorizer) addVolume(pv *corev1.PersistentVolume) {
	if pv.Spec.ClaimRef == nil {
		return
	}
	e := &volumeEntry{claim: nsName{pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name}}
	podrefs.PVSecrets(pv, func(ns, name string, kubelet bool) bool {
		if kubelet {
			e.secrets = append(e.secrets, nsName{ns, name})
		}
		return true
	})
	a.volumes[pv.Name] = e
	addTo(a.volumesByClaim, e.claim, pv.Name)
	for _, s := range e.secrets {
		addTo(a.volumesBySecret, s, pv.Name)
	}
}

func (a *Authorizer) removeVolume(name string) {
	e, ok := a.volumes[name]
	if !ok {
		return
	}
	removeFrom(a.volumesByClaim, e.claim, name)
	for _, s := range e.secrets {
		removeFrom(a.volumesBySecret, s, name)
	}
	delete(a.volumes, name)
}

// setAttachment records that attachment name is for node ("" forgets it).
func (a *Authorizer) setAttachment(name, node string) {
	k := key{attachmentKind, "", name}
	if old, ok := a.attachments[name]; ok {
		if old == node {
			return
		}
		a.dec(k, old)
		delete(a.attachments, name)
	}
	if node != "" {
		a.inc(k, node)
		a.attachments[name] = node
	}
}

// inc and dec count the pods (or attachments) on node that reach k.
func (a *Authorizer) inc(k key, node string) {
	nodes := a.reach[k]
	if nodes == nil {
		nodes = map[string]int{}
		a.reach[k] = nodes
	}
	nodes[node]++
}

func (a *Authorizer) dec(k key, node string) {
	nodes := a.reach[k]
	if nodes[node] <= 1 {
		delete(nodes, node)
		if len(nodes) == 0 {
			delete(a.reach, k)
		}
		return
	}
	nodes[node]--
}

func addTo(m map[nsName]map[string]struct{}, k nsName, v string) {
	set := m[k]
	if set == nil {
		set = map[string]struct{}{}
		m[k] = set
	}
	set[v] = struct{}{}
}

func removeFrom(m map[nsName]map[string]struct{}, k nsName, v string) {
	delete(m[k], v)
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// related reports whether node reaches the object k: directly through a
// pod bound to it (or an attachment to it), or, for a volume and the
// secrets volumes name, through the claim a volume is bound to.
// Callers hold a.mu for reading.
func (a *Authorizer) related(node string, k key) bool {
	if a.reach[k][node] > 0 {
		return true
	}
	switch k.kind {
	case volumeKind:
		e, ok := a.volumes[k.name]
		return ok && a.reach[key{claimKind, e.claim.namespace, e.claim.name}][node] > 0
	case secretKind:
		for pv := range a.volumesBySecret[nsName{k.namespace, k.name}] {
			e := a.volumes[pv]
			if a.reach[key{claimKind, e.claim.namespace, e.claim.name}][node] > 0 {
				return true
			}
		}
	}
	return false
}
