package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/storage"
)

// toStatus maps any error to the metav1.Status the client gets. Storage
// sentinel errors become their upstream codes; anything unknown is a 500.
func toStatus(err error, gr schema.GroupResource, name string) *metav1.Status {
	var statusErr apierrors.APIStatus
	switch {
	case errors.As(err, &statusErr):
		s := statusErr.Status()
		return &s
	case errors.Is(err, storage.ErrNotFound):
		return statusOf(apierrors.NewNotFound(gr, name))
	case errors.Is(err, storage.ErrExists):
		return statusOf(apierrors.NewAlreadyExists(gr, name))
	case errors.Is(err, storage.ErrConflict):
		return statusOf(apierrors.NewConflict(gr, name, errors.New(conflictMessage)))
	case errors.Is(err, storage.ErrCompacted):
		return statusOf(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %v", err)))
	case errors.Is(err, storage.ErrFuture):
		return statusOf(apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %v", err), 1))
	case errors.Is(err, context.DeadlineExceeded):
		return statusOf(apierrors.NewTimeoutError(err.Error(), 1))
	}
	return statusOf(apierrors.NewInternalError(err))
}

const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

func statusOf(err *apierrors.StatusError) *metav1.Status {
	s := err.Status()
	return &s
}

// notImplemented is the error for API features orch does not have yet.
func notImplemented(what string) error {
	return statusError(http.StatusNotImplemented, "NotImplemented", what+" is not implemented by orch")
}

func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// isNotFound is true for storage's ErrNotFound and for a 404 Status.
func isNotFound(err error) bool {
	return errors.Is(err, storage.ErrNotFound) || apierrors.IsNotFound(err)
}
