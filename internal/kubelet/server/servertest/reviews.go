package servertest

import (
	"context"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/server"
)

// AllowAll answers every SubjectAccessReview with allowed, as an apiserver
// would for system:masters, and keeps the reviews it was asked.
type AllowAll struct {
	mu      sync.Mutex
	reviews []authorizationv1.SubjectAccessReviewSpec
}

var _ server.SubjectAccessReviewer = (*AllowAll)(nil)

// Create allows the review.
func (a *AllowAll) Create(_ context.Context, review *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	a.mu.Lock()
	a.reviews = append(a.reviews, *review.Spec.DeepCopy())
	a.mu.Unlock()
	out := review.DeepCopy()
	out.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "servertest allows everything"}
	return out, nil
}

// Reviews returns the specs of the reviews asked so far.
func (a *AllowAll) Reviews() []authorizationv1.SubjectAccessReviewSpec {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]authorizationv1.SubjectAccessReviewSpec(nil), a.reviews...)
}
