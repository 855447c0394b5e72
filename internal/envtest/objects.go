package envtest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// Create creates obj with create (a typed client's Create) and returns
// what the apiserver stored; an error fails the test.
func Create[T any](t testing.TB, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) T {
	t.Helper()
	created, err := create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// Get returns the object name from get (a typed client's Get); an error
// fails the test.
func Get[T any](t testing.TB, get func(context.Context, string, metav1.GetOptions) (T, error), name string) T {
	t.Helper()
	obj, err := get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// Update gets the object name with get, applies change to it and writes it
// with update (a typed client's Update or UpdateStatus), getting it again
// and retrying when the write conflicts; any other error fails the test.
func Update[T any](t testing.TB, name string, get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error), change func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(obj)
		_, err = update(context.Background(), obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
