package ingress

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"orch/internal/gateway"
	"orch/internal/routing"
)

// gatewayAPI is the listers of the Gateway API objects (and Namespaces,
// for listeners that take routes by namespace selector).
type gatewayAPI struct {
	*gateway.Listers
	namespaces corelisters.NamespaceLister
}

// followGatewayAPI waits until Gateway API's definitions are served, then
// follows its objects with h and returns their listers once synced; nil
// when ctx ends first.
func followGatewayAPI(ctx context.Context, client kubernetes.Interface, gw gwclient.Interface, h cache.ResourceEventHandler, log *slog.Logger) *gatewayAPI {
	if !gateway.WaitServed(ctx, client.Discovery(), 10*time.Second) {
		return nil
	}
	f := gwinformers.NewSharedInformerFactory(gw, 0)
	cf := informers.NewSharedInformerFactory(client, 0)
	l, synced, err := gateway.Follow(f, h)
	if err != nil {
		log.Error("Gateway API not followed", "err", err)
		return nil
	}
	nss := cf.Core().V1().Namespaces()
	reg, err := nss.Informer().AddEventHandler(h)
	if err != nil {
		log.Error("Gateway API not followed", "err", err)
		return nil
	}
	synced = append(synced, reg.HasSynced)
	f.StartWithContext(ctx)
	cf.StartWithContext(ctx)
	go func() {
		<-ctx.Done()
		f.Shutdown()
		cf.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	log.Info("following Gateway API objects")
	return &gatewayAPI{Listers: l, namespaces: nss.Lister()}
}

// input is the Gateway API part of what is served now.
func (g *gatewayAPI) input(secrets map[string]*v1.Secret, svcs *routing.Services) gateway.Input {
	in := gateway.Input{Secrets: secrets, Services: svcs}
	_ = g.Fill(&in) // listers of synced informers do not fail
	in.Namespaces, _ = g.namespaces.List(labels.Everything())
	return in
}
