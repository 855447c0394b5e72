package podautoscaler

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/retry"
)

// targets reaches the scale subresource of any kind that has one
// (Deployments, StatefulSets, ReplicaSets, ReplicationControllers, custom
// resources), finding its resource through discovery.
type targets struct {
	mapper *restmapper.DeferredDiscoveryRESTMapper
	scales scale.ScalesGetter
}

func newTargets(config *rest.Config, disco discovery.DiscoveryInterface) (*targets, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	scales, err := scale.NewForConfig(config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disco))
	if err != nil {
		return nil, fmt.Errorf("the scale client: %w", err)
	}
	return &targets{mapper: mapper, scales: scales}, nil
}

// mappings returns the resources of gk, reading discovery again when the
// cached one does not know it (a custom resource defined since).
func (t *targets) mappings(gk schema.GroupKind) ([]*meta.RESTMapping, error) {
	ms, err := t.mapper.RESTMappings(gk)
	if len(ms) == 0 || err != nil {
		t.mapper.Reset()
		ms, err = t.mapper.RESTMappings(gk)
	}
	return ms, err
}

// get returns the scale of ref (in namespace) and the resource it was
// found as: the first of its resources that answers, or the first error.
func (t *targets) get(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupResource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, errInvalidAPIVersion{err}
	}
	ms, err := t.mappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, schema.GroupResource{}, errNoMapping{err}
	}
	var first error
	for _, m := range ms {
		gr := m.Resource.GroupResource()
		s, err := t.scales.Scales(namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return s, gr, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, first
}

// update sets the replicas of s (of resource gr) to replicas, reading the
// scale again and retrying when the write conflicts.
func (t *targets) update(ctx context.Context, gr schema.GroupResource, s *autoscalingv1.Scale, replicas int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s.Spec.Replicas = replicas
		_, err := t.scales.Scales(s.Namespace).Update(ctx, gr, s, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if fresh, getErr := t.scales.Scales(s.Namespace).Get(ctx, gr, s.Name, metav1.GetOptions{}); getErr == nil {
			*s = *fresh
		}
		return err
	})
}

// errInvalidAPIVersion: the target reference's apiVersion does not parse
// (a fault of the spec, retrying cannot cure it).
type errInvalidAPIVersion struct{ err error }

func (e errInvalidAPIVersion) Error() string { return e.err.Error() }
func (e errInvalidAPIVersion) Unwrap() error { return e.err }

// errNoMapping: discovery knows no resource of the target's kind.
type errNoMapping struct{ err error }

func (e errNoMapping) Error() string { return e.err.Error() }
func (e errNoMapping) Unwrap() error { return e.err }
