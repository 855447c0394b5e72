package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/dump"
)

// templateHash is the pod-template-hash of a template, computed as
// kube-controller-manager computes it, so ReplicaSet names look the same:
// FNV-32a over the deep print of the template value that k8s.io/utils/dump
// keeps stable for hashing, then the collision count (if any) as 8 bytes
// holding its little-endian uint32, and the decimal sum mapped onto safe
// characters.
func templateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// replicaSetName is "<deployment>-<hash>", the deployment part cut so the
// whole stays a valid name.
func replicaSetName(deployment, hash string) string {
	room := validation.DNS1123SubdomainMaxLength - 1 - len(hash)
	if len(deployment) > room && room > 0 {
		deployment = deployment[:room]
	}
	return deployment + "-" + hash
}
