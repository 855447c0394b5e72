package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ControllerRevisionHashLabel is the label New puts on a revision: its hash.
const ControllerRevisionHashLabel = "controller.kubernetes.io/hash"

// maxPrefixLen keeps <prefix>-<hash> within the 253 characters of a name.
const maxPrefixLen = 223

// Name returns the name of parent's revision with hash: <parent>-<hash>,
// the parent's name cut to 223 characters.
func Name(parent, hash string) string {
	if len(parent) > maxPrefixLen {
		parent = parent[:maxPrefixLen]
	}
	return parent + "-" + hash
}

// Hash is the hash of rev's data, salted with collisionCount when it is not
// nil, as a short string safe for names and label values.
func Hash(rev *appsv1.ControllerRevision, collisionCount *int32) string {
	h := fnv.New32()
	if len(rev.Data.Raw) > 0 {
		h.Write(rev.Data.Raw)
	}
	if rev.Data.Object != nil {
		if b, err := json.Marshal(rev.Data.Object); err == nil {
			h.Write(b)
		} else {
			fmt.Fprintf(h, "%#v", rev.Data.Object)
		}
	}
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// New builds (does not create) the revision of parent holding data: named
// <parent>-<hash>, labelled with templateLabels and the hash, controlled by
// parent. The namespace is left for Create to fill in.
func New(parent metav1.Object, parentKind schema.GroupVersionKind, templateLabels map[string]string,
	data runtime.RawExtension, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if parent == nil {
		return nil, fmt.Errorf("history.New: a parent is required to own the revision")
	}
	labels := make(map[string]string, len(templateLabels)+1)
	for k, v := range templateLabels {
		labels[k] = v
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		},
		Data:     data,
		Revision: revision,
	}
	hash := Hash(rev, collisionCount)
	rev.Name = Name(parent.GetName(), hash)
	rev.Labels[ControllerRevisionHashLabel] = hash
	return rev, nil
}

// Equal reports whether a and b hold the same data. Two nils are equal.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw) && apiequality.Semantic.DeepEqual(a.Data.Object, b.Data.Object)
}

// FindEqual returns the revisions of revs whose data equals needle's.
func FindEqual(revs []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revs {
		if Equal(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// Sort orders revs by .revision, then creation time, then name (all
// ascending); the order of equal revisions is kept.
func Sort(revs []*appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool { return less(revs[i], revs[j]) })
}

func less(a, b *appsv1.ControllerRevision) bool {
	if a.Revision != b.Revision {
		return a.Revision < b.Revision
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
