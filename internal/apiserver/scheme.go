package apiserver

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// newScheme registers every built-in API type, apiextensions.k8s.io/v1's (CustomResourceDefinition),
// apiregistration.k8s.io/v1's (APIService), metrics.k8s.io's, plus the meta.k8s.io types the server answers with (Table,
// PartialObjectMetadata) and discovery types.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(s))
	must(apidiscoveryv2.AddToScheme(s))
	must(apiextensionsv1.AddToScheme(s))
	must(apiregistrationv1.AddToScheme(s))
	must(metricsv1beta1.AddToScheme(s))
	metaGV := schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"}
	s.AddKnownTypes(metaGV, &metav1.Table{}, &metav1.TableOptions{},
		&metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadataList{})
	metav1.AddToGroupVersion(s, metaGV)
	return s
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// codecs holds the serializers the server negotiates between.
type codecs struct {
	scheme  *runtime.Scheme
	factory serializer.CodecFactory
	// storage encodes objects for etcd (protobuf with the k8s envelope).
	storage *protobuf.Serializer
	// strictJSON and strictYAML report unknown and duplicate fields.
	strictJSON *json.Serializer
	strictYAML *json.Serializer
	json       *json.Serializer
	params     runtime.ParameterCodec
}

func newCodecs(s *runtime.Scheme) *codecs {
	opts := json.SerializerOptions{Strict: true}
	return &codecs{
		scheme:     s,
		factory:    serializer.NewCodecFactory(s),
		storage:    protobuf.NewSerializer(s, s),
		strictJSON: json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, opts),
		strictYAML: json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true, Strict: true}),
		json:       json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{}),
		params:     runtime.NewParameterCodec(s),
	}
}
