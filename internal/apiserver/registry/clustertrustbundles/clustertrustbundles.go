// Package clustertrustbundles is the registry entry for
// certificates.k8s.io/v1 clustertrustbundles, with upstream's validation:
// a bundle of a signer is named after it, its trust bundle holds CA
// certificates only, each once, and its signer never changes.
package clustertrustbundles

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/certutil"
)

// maxTrustBundleSize is upstream's limit on spec.trustBundle (1 MiB).
const maxTrustBundleSize = 1 << 20

// Resource returns the clustertrustbundles entry. Names are checked here,
// by the signer name's rule; the generic check only keeps them safe in a
// path.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: certificatesv1.SchemeGroupVersion,
		Resource:     "clustertrustbundles",
		Kind:         "ClusterTrustBundle",
		SingularName: "clustertrustbundle",
		New:          func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} },
		NewList:      func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validate(obj.(*certificatesv1.ClusterTrustBundle), true)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(*certificatesv1.ClusterTrustBundle), old.(*certificatesv1.ClusterTrustBundle))
		},
		NameValidation: registry.NamePathSegment,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "SignerName", Type: "string", Description: certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]},
		},
		Row: func(obj runtime.Object, _ time.Time) []interface{} {
			b := obj.(*certificatesv1.ClusterTrustBundle)
			signer := b.Spec.SignerName
			if signer == "" {
				signer = "<none>"
			}
			return []interface{}{b.Name, signer}
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": obj.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
		},
	}
}

// validate checks the name against the signer name, the signer name when
// set, and the trust bundle when parseBundle (an update that keeps the
// bundle does not parse it again).
func validate(b *certificatesv1.ClusterTrustBundle, parseBundle bool) field.ErrorList {
	meta := field.NewPath("metadata")
	var errs field.ErrorList
	if b.GenerateName != "" {
		for _, msg := range checkName(b.GenerateName, b.Spec.SignerName, true) {
			errs = append(errs, field.Invalid(meta.Child("generateName"), b.GenerateName, msg))
		}
	}
	if b.Name != "" {
		for _, msg := range checkName(b.Name, b.Spec.SignerName, false) {
			errs = append(errs, field.Invalid(meta.Child("name"), b.Name, msg))
		}
	}
	if b.Spec.SignerName != "" {
		errs = append(errs, certutil.ValidateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
	}
	if parseBundle {
		errs = append(errs, validateTrustBundle(field.NewPath("spec", "trustBundle"), b.Spec.TrustBundle)...)
	}
	return errs
}

// validateUpdate adds that the signer name never changes.
func validateUpdate(b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
	errs := validate(b, b.Spec.TrustBundle != old.Spec.TrustBundle)
	return append(errs, apivalidation.ValidateImmutableField(b.Spec.SignerName, old.Spec.SignerName, field.NewPath("spec", "signerName"))...)
}

// checkName is upstream's rule for a bundle's name: without a signer, a
// DNS subdomain without ":"; with one, the signer name with ":" for "/",
// then ":", then a DNS subdomain.
func checkName(name, signer string, prefix bool) []string {
	if signer == "" {
		if strings.Contains(name, ":") {
			return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
		}
		return apivalidation.NameIsDNSSubdomain(name, prefix)
	}
	want := strings.ReplaceAll(signer, "/", ":") + ":"
	rest, ok := strings.CutPrefix(name, want)
	if !ok {
		return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, want)}
	}
	return apivalidation.NameIsDNSSubdomain(rest, prefix)
}

// validateTrustBundle wants PEM CERTIFICATE blocks without headers, each a
// CA certificate with valid basic constraints, at least one and none
// twice. A bad block is reported alone.
func validateTrustBundle(path *field.Path, bundle string) field.ErrorList {
	if len(bundle) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(path, "", maxTrustBundleSize)}
	}
	invalid := func(format string, args ...any) *field.Error {
		return field.Invalid(path, "<value omitted>", fmt.Sprintf(format, args...))
	}
	var errs field.ErrorList
	seen := map[string][]int{}
	var order []string
	rest := []byte(bundle)
	for i := 0; ; i++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			errs = append(errs, invalid("entry %d has bad block type: %v", i, block.Type))
			continue
		}
		if len(block.Headers) != 0 {
			errs = append(errs, invalid("entry %d has PEM block headers", i))
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		switch {
		case err != nil:
			errs = append(errs, invalid("entry %d does not parse as X.509", i))
			continue
		case !cert.IsCA:
			errs = append(errs, invalid("entry %d does not have the CA bit set", i))
			continue
		case !cert.BasicConstraintsValid:
			errs = append(errs, invalid("entry %d has invalid basic constraints", i))
			continue
		}
		key := string(block.Bytes)
		if seen[key] == nil {
			order = append(order, key)
		}
		seen[key] = append(seen[key], i)
	}
	if len(errs) > 0 {
		return errs
	}
	if len(order) == 0 {
		return field.ErrorList{invalid("at least one trust anchor must be provided")}
	}
	for _, key := range order {
		if at := seen[key]; len(at) > 1 {
			errs = append(errs, invalid("duplicate trust anchor (indices %v)", at))
		}
	}
	return errs
}
