package serviceaccount

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// TestSyncNamespace checks one sync against listers and a fake client.
func TestSyncNamespace(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "default", errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name      string
		phase     corev1.NamespacePhase // "" means no namespace
		existing  bool
		createErr error
		creates   int
		wantErr   bool
	}{
		{name: "active without account", phase: corev1.NamespaceActive, creates: 1},
		{name: "active with account", phase: corev1.NamespaceActive, existing: true},
		{name: "terminating", phase: corev1.NamespaceTerminating},
		{name: "namespace gone"},
		{name: "created meanwhile", phase: corev1.NamespaceActive, createErr: apierrors.NewAlreadyExists(schema.GroupResource{Resource: "serviceaccounts"}, "default"), creates: 1},
		{name: "terminating meanwhile", phase: corev1.NamespaceActive, createErr: terminating, creates: 1},
		{name: "create fails", phase: corev1.NamespaceActive, createErr: errors.New("etcd is down"), creates: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			saIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if tt.phase != "" {
				nsIndexer.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: tt.phase}})
			}
			if tt.existing {
				saIndexer.Add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "team"}})
			}
			client := fake.NewClientset()
			creates := 0
			client.PrependReactor("create", "serviceaccounts", func(action clienttesting.Action) (bool, runtime.Object, error) {
				creates++
				sa := action.(clienttesting.CreateAction).GetObject().(*corev1.ServiceAccount)
				if sa.Name != "default" || sa.Namespace != "team" {
					t.Errorf("created %s/%s, want team/default", sa.Namespace, sa.Name)
				}
				return tt.createErr != nil, nil, tt.createErr
			})
			c := &Controller{
				log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
				client:   client,
				nsLister: corelisters.NewNamespaceLister(nsIndexer),
				saLister: corelisters.NewServiceAccountLister(saIndexer),
				ensure:   DefaultServiceAccounts,
			}
			err := c.syncNamespace(context.Background(), "team")
			if (err != nil) != tt.wantErr {
				t.Errorf("syncNamespace = %v, want error %v", err, tt.wantErr)
			}
			if creates != tt.creates {
				t.Errorf("%d creates, want %d", creates, tt.creates)
			}
		})
	}
}
