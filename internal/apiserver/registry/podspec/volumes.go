package podspec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/certutil"
	"orch/internal/poddefaults"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

var supportedHostPathTypes = []string{
	string(corev1.HostPathUnset), string(corev1.HostPathBlockDev), string(corev1.HostPathCharDev),
	string(corev1.HostPathDirectory), string(corev1.HostPathDirectoryOrCreate), string(corev1.HostPathFile),
	string(corev1.HostPathFileOrCreate), string(corev1.HostPathSocket),
}

// validateVolumes checks the pod's volumes and returns them by name.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]corev1.VolumeSource{}
	for i := range volumes {
		v := &volumes[i]
		p := fldPath.Index(i)
		namePath := p.Child("name")
		if v.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
		} else {
			errs = append(errs, dns1123Label(namePath, v.Name)...)
			if _, dup := byName[v.Name]; dup {
				errs = append(errs, field.Duplicate(namePath, v.Name))
			}
		}
		errs = append(errs, validateVolumeSource(&v.VolumeSource, p)...)
		if v.Name != "" {
			byName[v.Name] = v.VolumeSource
		}
	}
	return byName, errs
}

// volumeSourceCount counts the sources set in a volume.
func volumeSourceCount(s *corev1.VolumeSource) int {
	return len(volumeSourceNames(s))
}

func volumeSourceNames(s *corev1.VolumeSource) []string { return poddefaults.VolumeSourceNames(s) }

func validateVolumeSource(s *corev1.VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := volumeSourceNames(s)
	if len(names) == 0 {
		return field.ErrorList{field.Required(p, "must specify a volume type")}
	}
	for _, extra := range names[1:] {
		errs = append(errs, field.Forbidden(p.Child(extra), "may not specify more than 1 volume type"))
	}
	if len(errs) > 0 {
		return errs
	}
	switch {
	case s.HostPath != nil:
		errs = append(errs, validateHostPath(s.HostPath, p.Child("hostPath"))...)
	case s.EmptyDir != nil:
		supported := []string{string(corev1.StorageMediumDefault), string(corev1.StorageMediumMemory), string(corev1.StorageMediumHugePages)}
		if m := string(s.EmptyDir.Medium); !contains(supported, m) && !strings.HasPrefix(m, string(corev1.StorageMediumHugePagesPrefix)) {
			errs = append(errs, field.NotSupported(p.Child("emptyDir", "medium"), s.EmptyDir.Medium, supported))
		}
		if s.EmptyDir.SizeLimit != nil && s.EmptyDir.SizeLimit.Sign() < 0 {
			errs = append(errs, field.Forbidden(p.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case s.Secret != nil:
		sp := p.Child("secret")
		if s.Secret.SecretName == "" {
			errs = append(errs, field.Required(sp.Child("secretName"), ""))
		} else {
			errs = append(errs, dns1123Subdomain(sp.Child("secretName"), s.Secret.SecretName)...)
		}
		errs = append(errs, validateMode(s.Secret.DefaultMode, sp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(s.Secret.Items, sp.Child("items"))...)
	case s.ConfigMap != nil:
		cp := p.Child("configMap")
		if s.ConfigMap.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			errs = append(errs, dns1123Subdomain(cp.Child("name"), s.ConfigMap.Name)...)
		}
		errs = append(errs, validateMode(s.ConfigMap.DefaultMode, cp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(s.ConfigMap.Items, cp.Child("items"))...)
	case s.PersistentVolumeClaim != nil:
		if s.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case s.NFS != nil:
		np := p.Child("nfs")
		if s.NFS.Server == "" {
			errs = append(errs, field.Required(np.Child("server"), ""))
		}
		if s.NFS.Path == "" {
			errs = append(errs, field.Required(np.Child("path"), ""))
		} else if !path.IsAbs(s.NFS.Path) {
			errs = append(errs, field.Invalid(np.Child("path"), s.NFS.Path, "must be an absolute path"))
		}
	case s.DownwardAPI != nil:
		dp := p.Child("downwardAPI")
		errs = append(errs, validateMode(s.DownwardAPI.DefaultMode, dp.Child("defaultMode"))...)
		errs = append(errs, validateDownwardAPIItems(s.DownwardAPI.Items, dp.Child("items"))...)
	case s.Projected != nil:
		errs = append(errs, validateProjected(s.Projected, p.Child("projected"))...)
	case s.CSI != nil:
		if s.CSI.Driver == "" {
			errs = append(errs, field.Required(p.Child("csi", "driver"), ""))
		}
	case s.Ephemeral != nil:
		ep := p.Child("ephemeral", "volumeClaimTemplate")
		if s.Ephemeral.VolumeClaimTemplate == nil {
			errs = append(errs, field.Required(ep, ""))
		} else {
			errs = append(errs, ValidatePersistentVolumeClaimSpec(&s.Ephemeral.VolumeClaimTemplate.Spec, ep.Child("spec"))...)
		}
	case s.Image != nil:
		if s.Image.Reference == "" {
			errs = append(errs, field.Required(p.Child("image", "reference"), ""))
		}
		if !contains(supportedPullPolicies, string(s.Image.PullPolicy)) {
			errs = append(errs, field.NotSupported(p.Child("image", "pullPolicy"), s.Image.PullPolicy, supportedPullPolicies))
		}
	case s.GitRepo != nil:
		if s.GitRepo.Repository == "" {
			errs = append(errs, field.Required(p.Child("gitRepo", "repository"), ""))
		}
	}
	return errs
}

func validateHostPath(hp *corev1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if hp.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else {
		for _, part := range strings.Split(hp.Path, "/") {
			if part == ".." {
				errs = append(errs, field.Invalid(p.Child("path"), hp.Path, "must not contain '..'"))
				break
			}
		}
	}
	if hp.Type != nil && !contains(supportedHostPathTypes, string(*hp.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), *hp.Type, supportedHostPathTypes))
	}
	return errs
}

func validateMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		if it.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalNonReservedPath(it.Path, ip.Child("path"))...)
		}
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

func validateLocalNonReservedPath(p string, fp *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(p, fp)
	if strings.HasPrefix(p, "..") {
		errs = append(errs, field.Invalid(fp, p, "must not start with '..'"))
	}
	return errs
}

func validateDownwardAPIItems(items []corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		if it.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalNonReservedPath(it.Path, ip.Child("path"))...)
		}
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(ip, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case it.FieldRef != nil:
			errs = append(errs, validateFieldRef(it.FieldRef, volumeFieldPaths, ip.Child("fieldRef"))...)
		case it.ResourceFieldRef != nil:
			errs = append(errs, validateResourceFieldRef(it.ResourceFieldRef, true, ip.Child("resourceFieldRef"))...)
		default:
			errs = append(errs, field.Required(ip, "one of fieldRef and resourceFieldRef is required"))
		}
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

func validateProjected(pr *corev1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateMode(pr.DefaultMode, p.Child("defaultMode"))...)
	paths := sets.New[string]()
	for i, src := range pr.Sources {
		sp := p.Child("sources").Index(i)
		n := 0
		var items []string
		if src.Secret != nil {
			n++
			items = append(items, keyPaths(src.Secret.Items)...)
			errs = append(errs, validateKeyToPaths(src.Secret.Items, sp.Child("secret", "items"))...)
		}
		if src.ConfigMap != nil {
			n++
			items = append(items, keyPaths(src.ConfigMap.Items)...)
			errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, sp.Child("configMap", "items"))...)
		}
		if src.DownwardAPI != nil {
			n++
			for _, it := range src.DownwardAPI.Items {
				items = append(items, it.Path)
			}
			errs = append(errs, validateDownwardAPIItems(src.DownwardAPI.Items, sp.Child("downwardAPI", "items"))...)
		}
		if tok := src.ServiceAccountToken; tok != nil {
			n++
			tp := sp.Child("serviceAccountToken")
			items = append(items, tok.Path)
			if tok.ExpirationSeconds != nil && *tok.ExpirationSeconds < 600 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *tok.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
			} else if tok.ExpirationSeconds != nil && *tok.ExpirationSeconds > 1<<32 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *tok.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
			}
			if tok.Path == "" {
				errs = append(errs, field.Required(tp.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(tok.Path, tp.Child("path"))...)
			}
		}
		if src.ClusterTrustBundle != nil {
			n++
			items = append(items, src.ClusterTrustBundle.Path)
		}
		if pc := src.PodCertificate; pc != nil {
			n++
			errs = append(errs, validatePodCertificate(pc, sp.Child("podCertificate"))...)
			for _, p := range []string{pc.CredentialBundlePath, pc.KeyPath, pc.CertificateChainPath} {
				items = append(items, p)
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Required(sp, "one source is required"))
		case n > 1:
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
		for _, it := range items {
			if it == "" {
				continue
			}
			if paths.Has(it) {
				errs = append(errs, field.Invalid(sp, it, "conflicting duplicate paths"))
			}
			paths.Insert(it)
		}
	}
	return errs
}

func keyPaths(items []corev1.KeyToPath) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Path)
	}
	return out
}

var supportedAccessModes = []string{
	string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOnce), string(corev1.ReadWriteOncePod),
}

// ValidatePersistentVolumeClaimSpec checks a claim spec, as found in a
// PersistentVolumeClaim, an ephemeral volume or a StatefulSet's
// volumeClaimTemplates.
func ValidatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(p.Child("accessModes"), "at least 1 access mode is required"))
	}
	rwop := false
	for _, m := range spec.AccessModes {
		if !contains(supportedAccessModes, string(m)) {
			errs = append(errs, field.NotSupported(p.Child("accessModes"), m, supportedAccessModes))
		}
		rwop = rwop || m == corev1.ReadWriteOncePod
	}
	if rwop && len(spec.AccessModes) > 1 {
		errs = append(errs, field.Forbidden(p.Child("accessModes"), "may not use ReadWriteOncePod with other access modes"))
	}
	if spec.Selector != nil {
		errs = append(errs, validateLabelSelector(spec.Selector, p.Child("selector"))...)
	}
	storage, ok := spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		errs = append(errs, field.Required(p.Child("resources").Key(string(corev1.ResourceStorage)), ""))
	} else if storage.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("resources").Key(string(corev1.ResourceStorage)), storage.String(), "must be greater than zero"))
	}
	for name, q := range spec.Resources.Requests {
		errs = append(errs, ValidateResourceQuantity(name, q, p.Child("resources", "requests").Key(string(name)))...)
	}
	for name, q := range spec.Resources.Limits {
		errs = append(errs, ValidateResourceQuantity(name, q, p.Child("resources", "limits").Key(string(name)))...)
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, dns1123Subdomain(p.Child("storageClassName"), *spec.StorageClassName)...)
	}
	if spec.VolumeMode != nil {
		supported := []string{string(corev1.PersistentVolumeBlock), string(corev1.PersistentVolumeFilesystem)}
		if !contains(supported, string(*spec.VolumeMode)) {
			errs = append(errs, field.NotSupported(p.Child("volumeMode"), *spec.VolumeMode, supported))
		}
	}
	if ds := spec.DataSource; ds != nil {
		dp := p.Child("dataSource")
		if ds.Name == "" {
			errs = append(errs, field.Required(dp.Child("name"), ""))
		}
		if ds.Kind == "" {
			errs = append(errs, field.Required(dp.Child("kind"), ""))
		}
		if (ds.APIGroup == nil || *ds.APIGroup == "") && ds.Kind != "PersistentVolumeClaim" {
			errs = append(errs, field.Invalid(dp, ds.Kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
		}
	}
	return errs
}

// The bounds of a podCertificate projection's maxExpirationSeconds:
// upstream's, with a lower maximum for the kubernetes.io signers.
const (
	minPodCertificateExpiration           = 3600
	maxPodCertificateExpiration           = 91 * 24 * 3600
	maxKubernetesPodCertificateExpiration = 24 * 3600
)

var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// validatePodCertificate checks a podCertificate projection as upstream:
// a valid signer name and key type, maxExpirationSeconds within bounds,
// and at least one valid path.
func validatePodCertificate(pc *corev1.PodCertificateProjection, p *field.Path) field.ErrorList {
	errs := certutil.ValidateSignerName(p.Child("signerName"), pc.SignerName)
	if !slices.Contains(podCertificateKeyTypes, pc.KeyType) {
		errs = append(errs, field.NotSupported(p.Child("keyType"), pc.KeyType, podCertificateKeyTypes))
	}
	if exp := pc.MaxExpirationSeconds; exp != nil {
		if *exp < minPodCertificateExpiration {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *exp, "if provided, maxExpirationSeconds must be >= 3600"))
		}
		limit := maxPodCertificateExpiration
		if strings.HasPrefix(pc.SignerName, "kubernetes.io/") {
			limit = maxKubernetesPodCertificateExpiration
		}
		if int(*exp) > limit {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *exp, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", limit)))
		}
	}
	paths := 0
	for _, f := range []struct{ name, path string }{
		{"credentialBundlePath", pc.CredentialBundlePath}, {"keyPath", pc.KeyPath}, {"certificateChainPath", pc.CertificateChainPath},
	} {
		if f.path != "" {
			paths++
			errs = append(errs, validateLocalNonReservedPath(f.path, p.Child(f.name))...)
		}
	}
	if paths == 0 {
		errs = append(errs, field.Required(p, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}
