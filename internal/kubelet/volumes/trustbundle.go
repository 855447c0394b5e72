package volumes

import (
	"cmp"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trustBundlePayload is a clusterTrustBundle projection: the certificates
// of the bundle it names, or of every bundle of its signer its label
// selector matches (a nil selector matches none, an empty one all), each
// once, as PEM in one file. A missing bundle, or a signer query matching
// none, gives an empty file when optional and an error otherwise, as
// upstream's kubelet.
func (s *setup) trustBundlePayload(src *corev1.ClusterTrustBundleProjection, mode int32) (map[string]fileProjection, error) {
	optional := isTrue(src.Optional)
	var bundles []certificatesv1.ClusterTrustBundle
	switch {
	case src.Name != nil:
		ctb, err := s.m.client.CertificatesV1().ClusterTrustBundles().Get(s.ctx, *src.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && optional:
		case err != nil:
			return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
		default:
			bundles = append(bundles, *ctb)
		}
	case src.SignerName != nil:
		if src.LabelSelector != nil {
			selector, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
			if err != nil {
				return nil, fmt.Errorf("while parsing label selector: %w", err)
			}
			list, err := s.m.client.CertificatesV1().ClusterTrustBundles().List(s.ctx, metav1.ListOptions{LabelSelector: selector.String()})
			if err != nil {
				return nil, fmt.Errorf("while listing ClusterTrustBundles: %w", err)
			}
			for _, ctb := range list.Items {
				if ctb.Spec.SignerName == *src.SignerName {
					bundles = append(bundles, ctb)
				}
			}
		}
		if len(bundles) == 0 && !optional {
			return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
		}
	default:
		return nil, errors.New("a clusterTrustBundle projection names neither a bundle nor a signer")
	}
	return map[string]fileProjection{src.Path: {Data: trustAnchors(bundles), Mode: mode}}, nil
}

// anchorOrder orders trust anchors: the same way while the kubelet runs
// (a file rewritten only when the anchors change), another way after a
// restart, as upstream shuffles them so that no one depends on the order.
var anchorOrder = rand.Uint64()

// trustAnchors is the certificates of bundles, each once, in anchorOrder.
func trustAnchors(bundles []certificatesv1.ClusterTrustBundle) []byte {
	seen := map[string]bool{}
	var ders []string
	for _, b := range bundles {
		rest := []byte(b.Spec.TrustBundle)
		for {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			if !seen[string(block.Bytes)] {
				seen[string(block.Bytes)] = true
				ders = append(ders, string(block.Bytes))
			}
		}
	}
	key := func(der string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(der))
		return h.Sum64() ^ anchorOrder
	}
	slices.SortFunc(ders, func(a, b string) int { return cmp.Compare(key(a), key(b)) })
	out := []byte{}
	for _, der := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(der)})...)
	}
	return out
}
