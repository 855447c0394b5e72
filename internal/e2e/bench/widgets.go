package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// widgetsGVR is the bench's custom resource: namespaced Widgets whose spec
// holds what the bench's configmaps hold in data (the payload, the counter,
// and the watch stamp sent), under a structural schema. The counter is
// "count", not "n": YAML 1.1 reads a bare n as false.
var widgetsGVR = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "widgets"}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	spec := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"payload"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"payload": {Type: "string", MaxLength: ptr.To[int64](4096)},
			"count":   {Type: "integer", Minimum: ptr.To(0.0)},
			"sent":    {Type: "integer", Format: "int64"},
		},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgetsGVR.Resource + "." + widgetsGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetsGVR.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: widgetsGVR.Resource, Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: widgetsGVR.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
			}},
		},
	}
}

// makeWidgetCRD creates the Widget CRD with config and waits until it is
// Established and discovery lists widgets. Both servers set Established
// themselves: orch's CRD controller, kube-apiserver's apiextensions server.
func makeWidgetCRD(config *rest.Config) error {
	ctx := context.Background()
	cs, err := apiextensionsclient.NewForConfig(config)
	if err != nil {
		return err
	}
	crds := cs.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Create(ctx, widgetCRD(), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create CustomResourceDefinition %s: %w", widgetCRD().Name, err)
	}
	served := func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil || !apiextensionshelpers.IsCRDConditionTrue(got, apiextensionsv1.Established) {
			return false, err
		}
		list, err := cs.Discovery().ServerResourcesForGroupVersion(widgetsGVR.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == widgetsGVR.Resource }), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, served); err != nil {
		return fmt.Errorf("wait for CustomResourceDefinition %s to be Established and in discovery: %w", crd.Name, err)
	}
	return nil
}

// widgets is the resource of the cr rows, through the dynamic client.
type widgets struct{}

var _ resource = widgets{}

func (widgets) String() string { return widgetsGVR.Resource }

func widget(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetsGVR.GroupVersion().String(),
		"kind":       "Widget",
		"metadata":   map[string]any{"namespace": ns, "name": name, "labels": map[string]any{"app": benchLabel}},
		"spec":       map[string]any{"payload": payload, "count": int64(0)},
	}}
}

func (widgets) create(ctx context.Context, c *client, ns, name string) error {
	_, err := c.dyn.Resource(widgetsGVR).Namespace(ns).Create(ctx, widget(ns, name), metav1.CreateOptions{})
	return err
}

func (widgets) get(ctx context.Context, c *client, ns, name string) (runtime.Object, error) {
	return c.dyn.Resource(widgetsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

func (widgets) list(ctx context.Context, c *client, ns string, opts metav1.ListOptions) (listed, error) {
	l, err := c.dyn.Resource(widgetsGVR).Namespace(ns).List(ctx, opts)
	if err != nil {
		return listed{}, err
	}
	out := listed{items: len(l.Items), ListMeta: metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue()}}
	for _, w := range l.Items {
		if w.GetLabels()["app"] == benchLabel {
			out.bench++
		}
	}
	return out, nil
}

func (widgets) update(ctx context.Context, c *client, obj runtime.Object, n int, sent int64) (runtime.Object, error) {
	w := obj.(*unstructured.Unstructured).DeepCopy()
	if err := unstructured.SetNestedField(w.Object, int64(n), "spec", "count"); err != nil {
		return nil, err
	}
	if sent != 0 {
		if err := unstructured.SetNestedField(w.Object, sent, "spec", "sent"); err != nil {
			return nil, err
		}
	}
	return c.dyn.Resource(widgetsGVR).Namespace(w.GetNamespace()).Update(ctx, w, metav1.UpdateOptions{})
}

func (widgets) watch(ctx context.Context, c *client, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.dyn.Resource(widgetsGVR).Namespace(ns).Watch(ctx, opts)
}

func (widgets) sent(obj runtime.Object) (int64, bool) {
	w, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return 0, false
	}
	sent, found, err := unstructured.NestedInt64(w.Object, "spec", "sent")
	return sent, found && err == nil
}
