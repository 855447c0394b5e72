// Package daemonsets is the registry entry for apps/v1 daemonsets.
package daemonsets

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

// Resource returns the daemonsets entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     appsv1.SchemeGroupVersion,
		Resource:         "daemonsets",
		Kind:             "DaemonSet",
		SingularName:     "daemonset",
		Namespaced:       true,
		ShortNames:       []string{"ds"},
		Categories:       []string{"all"},
		New:              func() runtime.Object { return &appsv1.DaemonSet{} },
		NewList:          func() runtime.Object { return &appsv1.DaemonSetList{} },
		HasStatus:        true,
		Default:          setDefaults,
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		Validate:         validate,
		ValidateUpdate:   validateUpdate,
		Columns:          columns(),
		Row:              row,
	}
}

// setDefaults applies upstream's apps/v1 defaults: a rolling update of one
// unavailable pod and no surge, and 10 old revisions kept.
func setDefaults(obj runtime.Object) {
	spec := &obj.(*appsv1.DaemonSet).Spec
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		ru := spec.UpdateStrategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			ru.MaxUnavailable = &v
		}
		if ru.MaxSurge == nil {
			v := intstr.FromInt32(0)
			ru.MaxSurge = &v
		}
	}
	if spec.RevisionHistoryLimit == nil {
		ten := int32(10)
		spec.RevisionHistoryLimit = &ten
	}
	podspec.DefaultPodTemplateSpec(&spec.Template)
}

// templateGeneration reads the deprecated template generation upstream still
// keeps in an annotation; it counts changes of the pod template.
func templateGeneration(ds *appsv1.DaemonSet) int64 {
	n, _ := strconv.ParseInt(ds.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	return n
}

func setTemplateGeneration(ds *appsv1.DaemonSet, n int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(n, 10)
}

func prepareForCreate(obj runtime.Object) {
	ds := obj.(*appsv1.DaemonSet)
	ds.Status = appsv1.DaemonSetStatus{}
	if templateGeneration(ds) < 1 {
		setTemplateGeneration(ds, 1)
	}
}

// prepareForUpdate keeps the template generation, adding one when the pod
// template changes.
func prepareForUpdate(obj, old runtime.Object) {
	ds, oldDS := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	gen := templateGeneration(oldDS)
	template := ds.Spec.Template.DeepCopy()
	podspec.DefaultPodTemplateSpec(template)
	if !apiequality.Semantic.DeepEqual(*template, oldDS.Spec.Template) {
		gen++
	}
	setTemplateGeneration(ds, gen)
}

func columns() []metav1.TableColumnDefinition {
	status := appsv1.DaemonSetStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Desired", Type: "integer", Description: status["desiredNumberScheduled"]},
		{Name: "Current", Type: "integer", Description: status["currentNumberScheduled"]},
		{Name: "Ready", Type: "integer", Description: status["numberReady"]},
		{Name: "Up-to-date", Type: "integer", Description: status["updatedNumberScheduled"]},
		{Name: "Available", Type: "integer", Description: status["numberAvailable"]},
		{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
	}
}

func row(obj runtime.Object, now time.Time) []interface{} {
	ds := obj.(*appsv1.DaemonSet)
	st := ds.Status
	names, images := workloadutil.ContainerCells(ds.Spec.Template.Spec.Containers)
	return []interface{}{
		ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		registry.Age(ds.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
	}
}
