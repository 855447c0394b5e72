package envtest

import (
	"context"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Events returns "Type Reason Message" of each event in namespace about the
// object of kind and name, oldest first.
func Events(t testing.TB, client kubernetes.Interface, namespace, kind, name string) []string {
	t.Helper()
	list, err := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := list.Items
	sort.SliceStable(items, func(i, j int) bool { return items[i].FirstTimestamp.Before(&items[j].FirstTimestamp) })
	var out []string
	for _, e := range items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return out
}

// CountPrefix returns how many of lines begin with prefix.
func CountPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
