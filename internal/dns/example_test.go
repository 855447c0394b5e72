package dns_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	orchdns "orch/internal/dns"
)

func Example() {
	client := fake.NewClientset(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.43.0.1", ClusterIPs: []string{"10.43.0.1"}},
	})
	srv, err := orchdns.New(orchdns.Config{
		Domain: "cluster.local",
		Listen: []string{"127.0.0.1:0"}, // a free port; see Addrs
	}, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Start(ctx)
	<-srv.Ready()

	m := new(dns.Msg)
	m.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	r, err := dns.Exchange(m, srv.Addrs()[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Answer[0])
	// Output: kubernetes.default.svc.cluster.local.	5	IN	A	10.43.0.1
}
