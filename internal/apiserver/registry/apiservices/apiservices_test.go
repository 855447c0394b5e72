package apiservices

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// local is a valid APIService this apiserver serves itself.
func local() *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.example.com"},
		Spec:       apiregistrationv1.APIServiceSpec{Group: "example.com", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15},
	}
}

// remote is a valid APIService served by a service, written as a user
// would (nothing defaulted).
func remote() *apiregistrationv1.APIService {
	s := local()
	s.Name, s.Spec.Version = "v1beta1.example.com", "v1beta1"
	s.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "example-api"}
	s.Spec.CABundle = []byte("-----BEGIN CERTIFICATE-----")
	return s
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "apiregistration.k8s.io/v1" || r.Resource != "apiservices" || r.Kind != "APIService" ||
		r.SingularName != "apiservice" || r.Namespaced || !r.HasStatus || r.NameValidation != registry.NamePathSegment {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || !reflect.DeepEqual(r.Categories, []string{"api-extensions"}) {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*apiregistrationv1.APIService); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*apiregistrationv1.APIServiceList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name    string
		service *apiregistrationv1.ServiceReference
		want    *apiregistrationv1.ServiceReference
	}{
		{"local stays local", nil, nil},
		{"port 443", &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "api"}, &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "api", Port: ptr.To[int32](443)}},
		{"port kept", &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "api", Port: ptr.To[int32](8443)}, &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "api", Port: ptr.To[int32](8443)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := local()
			s.Spec.Service = tt.service
			Resource().Default(s)
			if !reflect.DeepEqual(s.Spec.Service, tt.want) {
				t.Errorf("service = %+v, want %+v", s.Spec.Service, tt.want)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	stale := apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{
		{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse, Reason: "FailedDiscoveryCheck"},
		{Type: "Other", Status: apiregistrationv1.ConditionTrue},
	}}

	// A local APIService is available from the start.
	s := local()
	s.Status = stale
	registrytest.ExpectWant(t, registrytest.Create(Resource(), s))
	if c := s.Status.Conditions; len(c) != 1 || c[0].Type != apiregistrationv1.Available || c[0].Status != apiregistrationv1.ConditionTrue ||
		c[0].Reason != "Local" || c[0].Message == "" || c[0].LastTransitionTime.IsZero() {
		t.Errorf("local status = %+v, want only Available True (Local)", s.Status)
	}

	// One served by a service waits for whoever checks it.
	s = remote()
	s.Status = stale
	registrytest.ExpectWant(t, registrytest.Create(Resource(), s))
	if !reflect.DeepEqual(s.Status, apiregistrationv1.APIServiceStatus{}) {
		t.Errorf("remote status = %+v, want empty", s.Status)
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		base   func() *apiregistrationv1.APIService
		modify func(*apiregistrationv1.APIService)
		want   []want
	}{
		{"local", local, func(*apiregistrationv1.APIService) {}, nil},
		{"service", remote, func(*apiregistrationv1.APIService) {}, nil},
		{"core v1 with an empty group", local, func(s *apiregistrationv1.APIService) { s.Name, s.Spec.Group = "v1.", "" }, nil},
		{"name is not version.group", local, func(s *apiregistrationv1.APIService) { s.Name = "example.com" }, []want{
			{"FieldValueInvalid metadata.name", "must be `spec.version+\".\"+spec.group`: \"v1.example.com\""},
		}},
		{"generateName", local, func(s *apiregistrationv1.APIService) { s.GenerateName = "v1." }, []want{
			{"FieldValueInvalid metadata.generateName", "must be `spec.version+\".\"+spec.group`"},
		}},
		{"a name that is no path segment is left to the handlers", local, func(s *apiregistrationv1.APIService) { s.Name = "v1/example.com" }, nil},
		{"other ObjectMeta errors are left to the handlers", local, func(s *apiregistrationv1.APIService) {
			s.Labels = map[string]string{"bad key": "v"}
			s.Namespace = "default"
		}, nil},
		{"empty group other than v1", local, func(s *apiregistrationv1.APIService) { s.Name, s.Spec.Group, s.Spec.Version = "v2.", "", "v2" }, []want{
			{"FieldValueRequired spec.group", "only v1 may have an empty group"},
		}},
		{"bad group and version", local, func(s *apiregistrationv1.APIService) {
			s.Name, s.Spec.Group, s.Spec.Version = "1v.Example_com", "Example_com", "1v"
		}, []want{
			{"FieldValueInvalid spec.group", "a lowercase RFC 1123 subdomain"},
			{"FieldValueInvalid spec.version", "a DNS-1035 label"},
		}},
		{"no priorities", remote, func(s *apiregistrationv1.APIService) { s.Spec.GroupPriorityMinimum, s.Spec.VersionPriority = 0, 0 }, []want{
			{"FieldValueInvalid spec.groupPriorityMinimum", "must be positive and less than 20000"},
			{"FieldValueInvalid spec.versionPriority", "must be positive and less than 1000"},
		}},
		{"priorities too high", local, func(s *apiregistrationv1.APIService) {
			s.Spec.GroupPriorityMinimum, s.Spec.VersionPriority = 20001, 1001
		}, []want{
			{"FieldValueInvalid spec.groupPriorityMinimum", ""},
			{"FieldValueInvalid spec.versionPriority", ""},
		}},
		{"local with TLS settings", local, func(s *apiregistrationv1.APIService) {
			s.Spec.CABundle, s.Spec.InsecureSkipTLSVerify = []byte("ca"), true
		}, []want{
			{"FieldValueInvalid spec.caBundle", "local APIServices may not have a caBundle"},
			{"FieldValueInvalid spec.insecureSkipTLSVerify", "local APIServices may not have insecureSkipTLSVerify"},
		}},
		{"service without namespace, name or a valid port", remote, func(s *apiregistrationv1.APIService) {
			s.Spec.Service = &apiregistrationv1.ServiceReference{Port: ptr.To[int32](0)}
		}, []want{
			{"FieldValueRequired spec.service.namespace", ""},
			{"FieldValueRequired spec.service.name", ""},
			{"FieldValueInvalid spec.service.port", "port is not valid"},
		}},
		{"insecureSkipTLSVerify with caBundle", remote, func(s *apiregistrationv1.APIService) { s.Spec.InsecureSkipTLSVerify = true }, []want{
			{"FieldValueInvalid spec.insecureSkipTLSVerify", "may not be true if caBundle is present"},
		}},
		{"insecureSkipTLSVerify alone", remote, func(s *apiregistrationv1.APIService) {
			s.Spec.CABundle, s.Spec.InsecureSkipTLSVerify = nil, true
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.base()
			tt.modify(s)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), s), tt.want...)
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*apiregistrationv1.APIService)
		want   []want
	}{
		{"new priority and port", func(s *apiregistrationv1.APIService) {
			s.Spec.GroupPriorityMinimum, s.Spec.Service.Port = 2000, ptr.To[int32](8443)
		}, nil},
		{"a version that no longer matches the name", func(s *apiregistrationv1.APIService) { s.Spec.Version = "v2" }, []want{
			{"FieldValueInvalid metadata.name", "must be `spec.version+\".\"+spec.group`: \"v2.example.com\""},
		}},
		{"made local but keeps the caBundle", func(s *apiregistrationv1.APIService) { s.Spec.Service = nil }, []want{
			{"FieldValueInvalid spec.caBundle", "local APIServices may not have a caBundle"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := remote()
			Resource().Default(old)
			s := old.DeepCopy()
			tt.modify(s)
			registrytest.ExpectWant(t, registrytest.Update(Resource(), s, old), tt.want...)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	tests := []struct {
		name       string
		conditions []apiregistrationv1.APIServiceCondition
		want       []want
	}{
		{"available", []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, Reason: "Passed"}}, nil},
		{"unavailable and unknown", []apiregistrationv1.APIServiceCondition{
			{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse, Reason: "MissingEndpoints"},
			{Type: "Other", Status: apiregistrationv1.ConditionUnknown},
		}, nil},
		{"no such status", []apiregistrationv1.APIServiceCondition{
			{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue},
			{Type: "Other", Status: "Maybe"},
		}, []want{{"FieldValueNotSupported status.conditions[1].status", `supported values: "True", "False", "Unknown"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := remote()
			Resource().Default(old)
			s := old.DeepCopy()
			s.Status.Conditions = tt.conditions
			registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(s, old), tt.want...)
		})
	}

	// A stored APIService that today's rules reject still takes status writes.
	old := remote()
	old.Spec.GroupPriorityMinimum = 0
	s := old.DeepCopy()
	s.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse}}
	registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(s, old))
}
