package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedPortProtocols    = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	supportedPullPolicies     = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}
	supportedTerminationMsg   = []string{string(corev1.TerminationMessageFallbackToLogsOnError), string(corev1.TerminationMessageReadFile)}
	supportedHTTPSchemes      = []string{string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS)}
	supportedMountPropagation = []string{string(corev1.MountPropagationBidirectional), string(corev1.MountPropagationHostToContainer), string(corev1.MountPropagationNone)}
)

// containerKind says which list a container is in; some rules differ.
type containerKind int

const (
	regularContainer containerKind = iota
	initContainer
	ephemeralContainer
)

// podContext is what container validation needs to know about the pod.
type podContext struct {
	volumes     map[string]corev1.VolumeSource
	names       sets.Set[string] // container names seen so far, across all lists
	hostNetwork bool
	hostPorts   sets.Set[string] // protocol/hostIP/port seen so far
}

func validateContainers(containers []corev1.Container, kind containerKind, pc *podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kind == regularContainer && len(containers) == 0 {
		errs = append(errs, field.Required(path, ""))
	}
	for i := range containers {
		errs = append(errs, validateContainer(&containers[i], kind, pc, path.Index(i))...)
	}
	return errs
}

func validateContainer(c *corev1.Container, kind containerKind, pc *podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	namePath := path.Child("name")
	if c.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else {
		errs = append(errs, dns1123Label(namePath, c.Name)...)
		if pc.names.Has(c.Name) {
			errs = append(errs, field.Duplicate(namePath, c.Name))
		}
		pc.names.Insert(c.Name)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	if c.TerminationMessagePath == "" {
		errs = append(errs, field.Required(path.Child("terminationMessagePath"), ""))
	}
	switch {
	case c.TerminationMessagePolicy == "":
		errs = append(errs, field.Required(path.Child("terminationMessagePolicy"), "must be 'File' or 'FallbackToLogsOnError'"))
	case !contains(supportedTerminationMsg, string(c.TerminationMessagePolicy)):
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, supportedTerminationMsg))
	}
	switch {
	case c.ImagePullPolicy == "":
		errs = append(errs, field.Required(path.Child("imagePullPolicy"), ""))
	case !contains(supportedPullPolicies, string(c.ImagePullPolicy)):
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy, supportedPullPolicies))
	}
	errs = append(errs, validateContainerRestartPolicy(c, kind, path)...)
	errs = append(errs, validatePorts(c.Ports, kind, pc, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, pc, path.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, pc, path.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c.VolumeDevices, c.VolumeMounts, pc, path.Child("volumeDevices"))...)
	errs = append(errs, validateResourceRequirements(&c.Resources, true, path.Child("resources"))...)
	errs = append(errs, validateContainerSecurityContext(c.SecurityContext, path.Child("securityContext"))...)
	errs = append(errs, validateLifecycle(c.Lifecycle, path.Child("lifecycle"))...)

	probes := []struct {
		name  string
		probe *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}}
	sidecar := kind == initContainer && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	for _, p := range probes {
		if p.probe == nil || kind == ephemeralContainer { // ephemeral: refused by validateEphemeralOnly
			continue
		}
		probePath := path.Child(p.name)
		switch {
		case kind == initContainer && !sidecar:
			errs = append(errs, field.Forbidden(probePath, "may not be set for init containers without restartPolicy=Always"))
		default:
			errs = append(errs, validateProbe(p.probe, probePath)...)
			if p.name != "readinessProbe" && p.probe.SuccessThreshold != 1 {
				errs = append(errs, field.Invalid(probePath.Child("successThreshold"), p.probe.SuccessThreshold, "must be 1"))
			}
			if p.name == "readinessProbe" && p.probe.TerminationGracePeriodSeconds != nil {
				errs = append(errs, field.Invalid(probePath.Child("terminationGracePeriodSeconds"), *p.probe.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
			}
		}
	}
	return errs
}

func validateContainerRestartPolicy(c *corev1.Container, kind containerKind, path *field.Path) field.ErrorList {
	if c.RestartPolicy == nil {
		return nil
	}
	p := path.Child("restartPolicy")
	switch kind {
	case initContainer:
		if *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			return field.ErrorList{field.NotSupported(p, *c.RestartPolicy, []string{string(corev1.ContainerRestartPolicyAlways)})}
		}
	case ephemeralContainer:
		return nil // refused by validateEphemeralOnly
	default:
		supported := []string{string(corev1.ContainerRestartPolicyAlways), string(corev1.ContainerRestartPolicyNever), string(corev1.ContainerRestartPolicyOnFailure)}
		if !contains(supported, string(*c.RestartPolicy)) {
			return field.ErrorList{field.NotSupported(p, *c.RestartPolicy, supported)}
		}
	}
	return nil
}

func validatePorts(ports []corev1.ContainerPort, kind containerKind, pc *podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
			if pc.hostNetwork && port.HostPort != port.ContainerPort {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
			}
		}
		switch {
		case port.Protocol == "":
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		case !contains(supportedPortProtocols, string(port.Protocol)):
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
		if port.HostIP != "" {
			errs = append(errs, validation.IsValidIP(p.Child("hostIP"), port.HostIP)...)
		}
		if port.HostPort != 0 && kind != ephemeralContainer {
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if pc.hostPorts.Has(key) {
				errs = append(errs, field.Duplicate(p.Child("hostPort"), key))
			}
			pc.hostPorts.Insert(key)
		}
	}
	return errs
}

// Fields an environment variable may take from its own pod.
var envFieldPaths = []string{
	"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// Fields a downward API volume may take from its pod.
var volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

func validateEnv(env []corev1.EnvVar, pc *podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		p := path.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarSource(ev, pc, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarSource(ev corev1.EnvVar, pc *podContext, path *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if from.FieldRef != nil {
		n++
		errs = append(errs, validateFieldRef(from.FieldRef, envFieldPaths, path.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateResourceFieldRef(from.ResourceFieldRef, false, path.Child("resourceFieldRef"))...)
	}
	if ref := from.ConfigMapKeyRef; ref != nil {
		n++
		errs = append(errs, validateKeyRef(ref.Name, ref.Key, path.Child("configMapKeyRef"))...)
	}
	if ref := from.SecretKeyRef; ref != nil {
		n++
		errs = append(errs, validateKeyRef(ref.Name, ref.Key, path.Child("secretKeyRef"))...)
	}
	if ref := from.FileKeyRef; ref != nil {
		n++
		p := path.Child("fileKeyRef")
		if ref.VolumeName == "" {
			errs = append(errs, field.Required(p.Child("volumeName"), ""))
		} else if src, ok := pc.volumes[ref.VolumeName]; !ok {
			errs = append(errs, field.NotFound(p.Child("volumeName"), ref.VolumeName))
		} else if src.EmptyDir == nil {
			errs = append(errs, field.Invalid(p.Child("volumeName"), ref.VolumeName, "referenced volume must be an emptyDir volume"))
		}
		if ref.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalDescendingPath(ref.Path, p.Child("path"))...)
		}
		if ref.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateKeyRef(name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, dns1123Subdomain(path.Child("name"), name)...)
	}
	if key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(path.Child("key"), key, msg))
		}
	}
	return errs
}

func validateFieldRef(ref *corev1.ObjectFieldSelector, allowed []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIVersion == "" {
		errs = append(errs, field.Required(path.Child("apiVersion"), ""))
		return errs
	}
	if ref.APIVersion != "v1" {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), ref.APIVersion, "must be 'v1'"))
		return errs
	}
	if ref.FieldPath == "" {
		errs = append(errs, field.Required(path.Child("fieldPath"), ""))
		return errs
	}
	fp := ref.FieldPath
	// metadata.labels['key'] and metadata.annotations['key'] select one entry.
	if i := strings.Index(fp, "['"); i > 0 && strings.HasSuffix(fp, "']") {
		base, key := fp[:i], fp[i+2:len(fp)-2]
		if base != "metadata.labels" && base != "metadata.annotations" {
			return append(errs, field.Invalid(path.Child("fieldPath"), fp, "does not support subscript"))
		}
		for _, msg := range validation.IsQualifiedName(strings.ToLower(key)) {
			errs = append(errs, field.Invalid(path.Child("fieldPath"), fp, msg))
		}
		return errs
	}
	if !contains(allowed, fp) {
		errs = append(errs, field.NotSupported(path.Child("fieldPath"), fp, allowed))
	}
	return errs
}

var resourceFieldRefs = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}

func validateResourceFieldRef(ref *corev1.ResourceFieldSelector, needContainer bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if needContainer && ref.ContainerName == "" {
		errs = append(errs, field.Required(path.Child("containerName"), ""))
	}
	switch {
	case ref.Resource == "":
		errs = append(errs, field.Required(path.Child("resource"), ""))
	case strings.HasPrefix(ref.Resource, "limits.hugepages-") || strings.HasPrefix(ref.Resource, "requests.hugepages-"):
	case !contains(resourceFieldRefs, ref.Resource):
		errs = append(errs, field.NotSupported(path.Child("resource"), ref.Resource, resourceFieldRefs))
	}
	if ref.Divisor.Sign() < 0 {
		errs = append(errs, field.Invalid(path.Child("divisor"), ref.Divisor.String(), "must be greater than or equal to 0"))
	}
	return errs
}

func validateEnvFrom(sources []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, src := range sources {
		p := path.Index(i)
		if src.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(src.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), src.Prefix, msg))
			}
		}
		n := 0
		if src.ConfigMapRef != nil {
			n++
			errs = append(errs, validateRefName(src.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
		}
		if src.SecretRef != nil {
			n++
			errs = append(errs, validateRefName(src.SecretRef.Name, p.Child("secretRef", "name"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateRefName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return dns1123Subdomain(path, name)
}

func validateVolumeMounts(mounts []corev1.VolumeMount, pc *podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if _, ok := pc.volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPath != "" && m.SubPathExpr != "" {
			errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		if m.MountPropagation != nil && !contains(supportedMountPropagation, string(*m.MountPropagation)) {
			errs = append(errs, field.NotSupported(p.Child("mountPropagation"), *m.MountPropagation, supportedMountPropagation))
		}
		if m.RecursiveReadOnly != nil {
			supported := []string{string(corev1.RecursiveReadOnlyDisabled), string(corev1.RecursiveReadOnlyEnabled), string(corev1.RecursiveReadOnlyIfPossible)}
			if !contains(supported, string(*m.RecursiveReadOnly)) {
				errs = append(errs, field.NotSupported(p.Child("recursiveReadOnly"), *m.RecursiveReadOnly, supported))
			} else if *m.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled && !m.ReadOnly {
				errs = append(errs, field.Forbidden(p.Child("recursiveReadOnly"), "may only be specified when readOnly is true"))
			}
		}
	}
	return errs
}

func validateVolumeDevices(devices []corev1.VolumeDevice, mounts []corev1.VolumeMount, pc *podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	mounted := sets.New[string]()
	for _, m := range mounts {
		mounted.Insert(m.Name)
	}
	for i, d := range devices {
		p := path.Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if src, ok := pc.volumes[d.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		} else if src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if mounted.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		} else if paths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		paths.Insert(d.DevicePath)
	}
	return errs
}

func validateProbe(probe *corev1.Probe, path *field.Path) field.ErrorList {
	errs := validateHandler(probe.Exec, probe.HTTPGet, probe.TCPSocket, probe.GRPC, nil, path)
	errs = append(errs, nonNegative(int64(probe.InitialDelaySeconds), path.Child("initialDelaySeconds"))...)
	errs = append(errs, nonNegative(int64(probe.TimeoutSeconds), path.Child("timeoutSeconds"))...)
	errs = append(errs, nonNegative(int64(probe.PeriodSeconds), path.Child("periodSeconds"))...)
	errs = append(errs, nonNegative(int64(probe.SuccessThreshold), path.Child("successThreshold"))...)
	errs = append(errs, nonNegative(int64(probe.FailureThreshold), path.Child("failureThreshold"))...)
	if probe.TerminationGracePeriodSeconds != nil && *probe.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *probe.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

func validateLifecycle(lc *corev1.Lifecycle, path *field.Path) field.ErrorList {
	if lc == nil {
		return nil
	}
	var errs field.ErrorList
	for name, h := range map[string]*corev1.LifecycleHandler{"postStart": lc.PostStart, "preStop": lc.PreStop} {
		if h != nil {
			errs = append(errs, validateHandler(h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep, path.Child(name))...)
		}
	}
	return errs
}

// validateHandler checks that exactly one action is set and that it is valid.
func validateHandler(exec *corev1.ExecAction, http *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction, sleep *corev1.SleepAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	more := func(name string) {
		n++
		if n > 1 {
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
		}
	}
	if exec != nil {
		more("exec")
		if len(exec.Command) == 0 {
			errs = append(errs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if http != nil {
		more("httpGet")
		p := path.Child("httpGet")
		if http.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validatePortNumOrName(http.Port, p.Child("port"))...)
		if !contains(supportedHTTPSchemes, string(http.Scheme)) {
			errs = append(errs, field.NotSupported(p.Child("scheme"), http.Scheme, supportedHTTPSchemes))
		}
		for i, h := range http.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(h.Name) {
				errs = append(errs, field.Invalid(p.Child("httpHeaders").Index(i).Child("name"), h.Name, msg))
			}
		}
	}
	if tcp != nil {
		more("tcpSocket")
		errs = append(errs, validatePortNumOrName(tcp.Port, path.Child("tcpSocket", "port"))...)
	}
	if grpc != nil {
		more("grpc")
		for _, msg := range validation.IsValidPortNum(int(grpc.Port)) {
			errs = append(errs, field.Invalid(path.Child("grpc", "port"), grpc.Port, msg))
		}
	}
	if sleep != nil {
		more("sleep")
		if sleep.Seconds < 0 {
			errs = append(errs, field.Invalid(path.Child("sleep", "seconds"), sleep.Seconds, "must be non-negative"))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}
