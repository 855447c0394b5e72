package server

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Every server keeps a Lease in kube-system that says it serves the API at
// its advertise address; the default/kubernetes Endpoints list the servers
// whose Lease is fresh, so that Services and agents find all of them and
// forget one that stopped (after apiserverLeaseDuration).
const (
	apiserverLeaseLabel    = "orch.io/apiserver"
	apiserverLeasePrefix   = "orch-apiserver-"
	apiserverLeaseDuration = 30 // seconds; renewed every bootstrap round (10 s)
)

// apiserverIPs renews this server's Lease and returns the addresses of
// every server with a fresh one, this one included, sorted.
func apiserverIPs(ctx context.Context, client kubernetes.Interface, self net.IP, now time.Time) ([]string, error) {
	if err := renewAPIServerLease(ctx, client, self, now); err != nil {
		return nil, err
	}
	leases, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: apiserverLeaseLabel + "=true"})
	if err != nil {
		return nil, err
	}
	ips := []string{self.String()}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		expires := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		ip := net.ParseIP(*l.Spec.HolderIdentity)
		if ip != nil && now.Before(expires) && !slices.Contains(ips, ip.String()) {
			ips = append(ips, ip.String())
		}
	}
	slices.Sort(ips)
	return ips, nil
}

func renewAPIServerLease(ctx context.Context, client kubernetes.Interface, self net.IP, now time.Time) error {
	leases := client.CoordinationV1().Leases(metav1.NamespaceSystem)
	name := apiserverLeasePrefix + strings.NewReplacer(".", "-", ":", "-").Replace(self.String())
	holder, duration := self.String(), int32(apiserverLeaseDuration)
	renew := metav1.NewMicroTime(now)
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: map[string]string{apiserverLeaseLabel: "true"}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &renew},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{FieldManager: "orch-bootstrap"})
		return err
	}
	if err != nil {
		return fmt.Errorf("lease %s: %w", name, err)
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &holder, &duration, &renew
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: "orch-bootstrap"})
	return err
}
