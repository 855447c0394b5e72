package zzsmoketmp

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type scaleWrap struct{ Scale autoscalingv1.Scale }

func autoscaling(n int32) *scaleWrap {
	return &scaleWrap{Scale: autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}}
}
